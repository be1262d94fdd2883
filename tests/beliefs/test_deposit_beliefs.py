"""A deposit's `belief`: one observation on the writer's channel, withdrawn or erased with the deposit."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from beliefs.models import Belief, BeliefRevision, WithdrawnDeposit
from beliefs.services import beliefs_verify
from deposits.models import Deposit
from tests.beliefs.helpers import KEY, NEW, OLD, observe, verdict


def deposit(client, value, *, user="alice", status=201, **fields):
    body = {"content": f"The coffee ratio is {value}", "belief": {"key": KEY, "value": value}, **fields}
    answer = client.post(f"/users/{user}/deposits", body)
    assert answer.status == status, answer.body
    return answer.body


def test_a_deposit_with_a_belief_records_one_observation_on_the_writers_channel(api):
    written = deposit(api, NEW)["deposit"]
    assert written["belief"] == {"key": KEY, "value": NEW}
    revision = BeliefRevision.objects.get()
    assert (revision.channel, revision.tier) == ("agent-a", "agent_own")
    assert str(revision.deposit_id) == written["id"]
    log = api.get(f"/users/alice/beliefs/{KEY}/revisions").body["items"]
    assert log[0]["deposit_id"] == written["id"]
    assert (verdict(api)["fact"], verdict(api)["probability"]) == (NEW, pytest.approx(0.7))


def test_a_soft_retracted_deposit_stops_counting_and_its_revision_stays_in_the_log(api, owner):
    observe(owner, OLD, content_confidence=0.9)
    without = verdict(api)
    written = deposit(api, NEW)["deposit"]["id"]
    assert verdict(api)["fact"] == NEW
    assert api.delete(f"/users/alice/deposits/{written}").status == 200
    assert verdict(api) == without
    log = api.get(f"/users/alice/beliefs/{KEY}/revisions").body
    assert log["total"] == 2
    assert log["items"][1]["deposit_id"] == written
    # Withdrawn, it no longer moves the verdict at its place in the log.
    assert log["items"][1]["verdict"] == log["items"][0]["verdict"]
    assert WithdrawnDeposit.objects.filter(deposit_id=written).exists()
    assert beliefs_verify()["mismatches"] == []


def test_a_withdrawn_observation_stays_out_of_later_replays(api, owner):
    observe(owner, OLD, content_confidence=0.9)
    written = deposit(api, NEW)["deposit"]["id"]
    api.delete(f"/users/alice/deposits/{written}")
    # A late claim replays the log: the withdrawn one must stay out of that replay too.
    observe(api, "6 oz per tbsp", observed_at=(timezone.now() - timedelta(days=3)).isoformat())
    after = verdict(api)
    assert after["fact"] == OLD
    assert NEW not in after["distribution"]
    assert after["observation_count"] == 2
    assert beliefs_verify()["mismatches"] == []


def test_retracting_the_only_deposit_leaves_no_belief_but_keeps_its_revision(api):
    written = deposit(api, NEW)["deposit"]["id"]
    api.delete(f"/users/alice/deposits/{written}")
    assert api.get(f"/users/alice/beliefs/{KEY}").status == 404
    assert api.get("/users/alice/beliefs").body["total"] == 0
    assert api.get(f"/users/alice/beliefs/{KEY}/revisions").body["total"] == 1


def test_a_hard_erased_deposit_takes_its_revisions_with_it(api, owner, eraser):
    observe(owner, OLD, content_confidence=0.9)
    without = verdict(api)
    written = deposit(api, NEW)["deposit"]["id"]
    assert eraser.delete(f"/users/alice/deposits/{written}?mode=hard").status == 200
    assert not BeliefRevision.objects.filter(deposit_id=written).exists()
    assert BeliefRevision.objects.count() == 1
    assert verdict(api) == without
    assert api.get(f"/users/alice/beliefs/{KEY}/revisions").body["total"] == 1
    assert beliefs_verify()["mismatches"] == []


def test_erasing_a_soft_retracted_deposit_removes_its_revisions_and_its_withdrawal(api, owner, eraser):
    observe(owner, OLD, content_confidence=0.9)
    written = deposit(api, NEW)["deposit"]["id"]
    api.delete(f"/users/alice/deposits/{written}")
    eraser.delete(f"/users/alice/deposits/{written}?mode=hard")
    assert not BeliefRevision.objects.filter(deposit_id=written).exists()
    assert not WithdrawnDeposit.objects.exists()
    assert verdict(api)["fact"] == OLD


def test_a_replayed_deposit_records_no_second_observation(api):
    first = deposit(api, NEW, idempotency_key="ak_ratio-1")
    again = deposit(api, NEW, idempotency_key="ak_ratio-1", status=200)
    assert again["is_idempotent_replay"] is True
    assert again["deposit"]["id"] == first["deposit"]["id"]
    assert BeliefRevision.objects.count() == 1
    assert verdict(api)["observation_count"] == 1


def test_a_replay_through_the_header_records_no_second_observation(api):
    body = {"content": "ratio", "belief": {"key": KEY, "value": NEW}}
    api.post("/users/alice/deposits", body, headers={"Idempotency-Key": "ak_ratio-2"})
    again = api.post("/users/alice/deposits", body, headers={"Idempotency-Key": "ak_ratio-2"})
    assert again.status == 200
    assert BeliefRevision.objects.count() == 1


def in_ten_minutes() -> str:
    return (timezone.now() + timedelta(minutes=10)).isoformat()


@pytest.mark.parametrize(
    ("belief", "field"),
    [
        ({"key": "Coffee Ratio", "value": NEW}, "belief.key"),
        ({"key": KEY, "value": "x" * 501}, "belief.value"),
        ({"key": KEY, "value": ""}, "belief.value"),
        ({"key": KEY, "value": NEW, "content_confidence": 1.5}, "belief.content_confidence"),
        ({"key": KEY, "value": NEW, "taint_tier": "gossip"}, "belief.taint_tier"),
        ({"key": KEY, "value": NEW, "observed_at": in_ten_minutes}, "belief.observed_at"),
        ({"key": KEY, "value": NEW, "tier": "user_edit"}, "belief.tier"),
        ({"key": KEY}, "belief.value"),
    ],
    ids=[
        "bad-key",
        "value-of-501-chars",
        "empty-value",
        "confidence-1.5",
        "unknown-taint-tier",
        "observed-10-minutes-ahead",
        "a-tier-in-the-body",
        "no-value",
    ],
)
def test_a_deposit_whose_belief_is_invalid_is_422_and_stores_nothing(api, belief, field):
    belief = {name: value() if callable(value) else value for name, value in belief.items()}
    body = {"content": "ratio", "idempotency_key": "ak_bad-1"}
    answer = api.post("/users/alice/deposits", {**body, "belief": belief})
    assert answer.status == 422, answer.body
    assert answer.body["error"]["code"] == "validation_error"
    assert answer.body["error"]["field"] == field
    assert not Deposit.objects.exists()
    assert not BeliefRevision.objects.exists()
    assert not Belief.objects.exists()
    # Nothing was claimed either: the key is free for the corrected write.
    fixed = api.post("/users/alice/deposits", {**body, "belief": {"key": KEY, "value": NEW}})
    assert fixed.status == 201, fixed.body


def test_a_bulk_item_with_a_bad_belief_fails_alone(api):
    items = [
        {"content": "ratio", "idempotency_key": "ak_b-1", "belief": {"key": KEY, "value": NEW}},
        {
            "content": "ratio",
            "idempotency_key": "ak_b-2",
            "belief": {"key": KEY, "value": OLD, "taint_tier": "x"},
        },
    ]
    answer = api.post("/users/alice/deposits/bulk", {"items": items})
    assert answer.status == 200, answer.body
    assert [f["index"] for f in answer.body["failed"]] == [1]
    assert answer.body["failed"][0]["error"]["field"] == "belief.taint_tier"
    assert list(BeliefRevision.objects.values_list("value", flat=True)) == [NEW]

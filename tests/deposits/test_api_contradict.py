from __future__ import annotations

import uuid

from deposits.domain.bags import bag_id
from deposits.domain.types import Scope
from deposits.models import Contradiction, Deposit, ScopeBag

SCOPE = {"model": "gpt-5", "dataset": "claims-q1", "env": "prod", "note": "March run"}
CLAIM = {
    "content": "Threshold 0.7 works",
    "polarity": "positive",
    "evidence_grade": "observed",
    "scope": SCOPE,
}


def add(api, body=CLAIM, user="alice"):
    answer = api.post(f"/users/{user}/deposits", body)
    assert answer.status == 201, answer.body
    return answer.body["deposit"]


def correct(api, *ids, **fields):
    body = {
        "content": "Threshold 0.7 over-flags",
        "contradicts": list(ids),
        "reason": "re-measured",
        **fields,
    }
    return api.post("/users/alice/contradict", body)


def test_it_writes_a_correction_that_answers_201_and_lists_what_it_contradicts(api):
    old = add(api)
    answer = correct(api, old["id"], polarity="negative", artifact_refs=["s3://runs/8"])
    assert answer.status == 201
    assert answer.body["kind"] == "add_result"
    assert answer.body["is_idempotent_replay"] is False
    assert answer.body["deposit"]["contradicts"] == [old["id"]]
    edge = Contradiction.objects.get()
    assert (str(edge.new_deposit_id), str(edge.old_deposit_id), edge.reason) == (
        answer.body["deposit"]["id"],
        old["id"],
        "re-measured",
    )


def test_a_correction_without_scope_takes_the_first_contradicted_deposits_scope(api):
    first = add(api)
    second = add(api, {"content": "elsewhere", "scope": {"model": "other"}})
    new = correct(api, first["id"], second["id"]).body["deposit"]
    assert new["scope"] == {**dict.fromkeys(("version", "n", "seed")), **SCOPE}
    assert Deposit.objects.get(pk=new["id"]).bag_id == bag_id("alice", Scope(**SCOPE))


def test_a_correction_with_its_own_scope_keeps_it(api):
    old = add(api)
    new = correct(api, old["id"], scope={"model": "gpt-6"}).body["deposit"]
    assert new["scope"]["model"] == "gpt-6"
    assert new["scope"]["dataset"] is None


def test_the_contradicted_deposit_stays_readable_and_names_what_superseded_it(api):
    old = add(api)
    new = correct(api, old["id"]).body["deposit"]
    answer = api.get(f"/users/alice/deposits/{old['id']}")
    assert answer.status == 200
    assert answer.body["content"] == old["content"]
    assert answer.body["superseded_by"] == [new["id"]]
    assert answer.body["retracted"] is False


def test_a_superseded_deposit_stops_counting_in_its_bag(api):
    old = add(api)
    correct(api, old["id"], polarity="open")
    bag = ScopeBag.objects.get(id=bag_id("alice", Scope(**SCOPE)))
    assert (bag.live_positive, bag.live_open, bag.kept_positive, bag.kept_superseded) == (0, 1, 1, 1)


def test_it_requires_a_reason(api):
    old = add(api)
    missing = api.post("/users/alice/contradict", {"content": "x", "contradicts": [old["id"]]})
    blank = correct(api, old["id"], reason="   ")
    for answer in (missing, blank):
        assert answer.status == 422
        assert answer.body["error"]["code"] == "validation_error"
        assert answer.body["error"]["field"] == "reason"
    assert Deposit.objects.count() == 1


def test_it_requires_at_least_one_contradicted_id(api):
    answer = correct(api)
    assert answer.status == 422
    assert answer.body["error"]["field"] == "contradicts"
    assert not Deposit.objects.exists()


def test_it_answers_missing_contradicts_for_unknown_ids_and_other_owners_deposits(api):
    bobs = add(api, user="bob")
    unknown = str(uuid.uuid4())
    answer = correct(api, unknown, bobs["id"])
    assert answer.status == 422
    assert answer.body["error"]["code"] == "missing_contradicts"
    assert answer.body["error"]["missing"] == [unknown, bobs["id"]]
    assert Deposit.objects.count() == 1
    assert not Contradiction.objects.exists()


def test_a_correction_still_passes_the_gate(api):
    old = add(api, {**CLAIM, "scope": {"model": "gpt-5"}, "evidence_grade": "replicated"})
    answer = correct(api, old["id"], polarity="negative")
    assert answer.status == 422
    assert answer.body["error"]["code"] == "gate_rejected"
    assert answer.body["error"]["gate_reason"].startswith("negative/broad")
    assert Deposit.objects.count() == 1
    assert not Contradiction.objects.exists()
    assert api.get(f"/users/alice/deposits/{old['id']}").body["superseded_by"] == []

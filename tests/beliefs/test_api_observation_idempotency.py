"""Observations posted with an idempotency key (api.md): a retry replays, another payload conflicts.

POST /users/{u}/beliefs/{key}/observations: a retry within 24 hours answers 200 with the original
revision and moves nothing; another payload under the key is 409 idempotency_conflict.
"""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone

from beliefs.models import Belief, BeliefRevision, ObservationKey
from tests.beliefs.helpers import KEY, NEW, OLD, claimed, verdict

PATH = f"/users/alice/beliefs/{KEY}/observations"
HEADER = {"Idempotency-Key": "ak_obs-1"}


def later(delta: timedelta):
    """Move the clock forward by `delta` (no sleeping)."""
    return mock.patch("beliefs.services.timezone.now", return_value=timezone.now() + delta)


def test_the_same_observation_sent_four_times_with_one_key_moves_the_belief_once(api):
    answers = [api.post(PATH, {"value": NEW}, headers=HEADER) for _ in range(4)]
    assert [a.status for a in answers] == [201, 200, 200, 200]
    assert [a.body["is_idempotent_replay"] for a in answers] == [False, True, True, True]
    assert BeliefRevision.objects.count() == 1
    assert Belief.objects.get().observation_count == 1
    # A first trusted sighting at c = 0.7 leaves p = 0.7; three more would have made it 0.967.
    assert verdict(api)["probability"] == pytest.approx(0.7)


def test_a_replay_answers_the_original_revision(api):
    first = api.post(PATH, {"value": NEW, "source_id": "chat-7"}, headers=HEADER)
    again = api.post(PATH, {"value": NEW, "source_id": "chat-7"}, headers=HEADER)
    assert again.status == 200, again.body
    assert again.body["kind"] == "belief_revision"
    original = {k: v for k, v in first.body.items() if k not in {"is_idempotent_replay", "verdict"}}
    assert {k: again.body[k] for k in original} == original
    assert again.body["verdict"]["probability"] == pytest.approx(first.body["verdict"]["probability"])


def test_the_key_may_be_sent_in_the_body(api):
    first = api.post(PATH, {"value": NEW, "idempotency_key": "ak_obs-1"})
    again = api.post(PATH, {"value": NEW, "idempotency_key": "ak_obs-1"})
    header = api.post(PATH, {"value": NEW}, headers=HEADER)
    assert (first.status, again.status, header.status) == (201, 200, 200)
    assert first.body["sequence"] == again.body["sequence"] == header.body["sequence"]
    assert BeliefRevision.objects.count() == 1


def test_a_header_and_a_body_key_that_differ_are_refused(api):
    answer = api.post(PATH, {"value": NEW, "idempotency_key": "ak_other"}, headers=HEADER)
    assert (answer.status, answer.body["error"]["field"]) == (422, "idempotency_key")
    assert not BeliefRevision.objects.exists()


def test_an_empty_key_is_refused_not_ignored(api):
    answer = api.post(PATH, {"value": NEW, "idempotency_key": ""})
    assert (answer.status, answer.body["error"]["field"]) == (422, "idempotency_key")
    assert not BeliefRevision.objects.exists()


@pytest.mark.parametrize(
    "other",
    [
        {"value": OLD},
        {"value": NEW, "content_confidence": 0.9},
        {"value": NEW, "source_id": "chat-8"},
        {"value": NEW, "observed_at": claimed(5)},
        {"value": NEW, "taint_tier": "web_fetch"},
    ],
)
def test_the_same_key_with_another_payload_is_a_409_that_changes_nothing(api, other):
    first = api.post(PATH, {"value": NEW}, headers=HEADER)
    answer = api.post(PATH, other, headers=HEADER)
    assert answer.status == 409, answer.body
    assert answer.body["error"]["code"] == "idempotency_conflict"
    assert answer.body["error"]["idempotency_key"] == HEADER["Idempotency-Key"]
    assert answer.body["error"]["existing_id"] == str(first.body["sequence"])
    assert BeliefRevision.objects.count() == 1
    assert verdict(api)["probability"] == pytest.approx(0.7)


def test_the_same_key_on_another_belief_is_another_payload(api):
    api.post(PATH, {"value": NEW}, headers=HEADER)
    answer = api.post("/users/alice/beliefs/milk/observations", {"value": NEW}, headers=HEADER)
    assert (answer.status, answer.body["error"]["code"]) == (409, "idempotency_conflict")
    assert not Belief.objects.filter(key="milk").exists()


def test_a_key_is_scoped_to_one_owner(api):
    alice = api.post(PATH, {"value": NEW}, headers=HEADER)
    bob = api.post(f"/users/bob/beliefs/{KEY}/observations", {"value": NEW}, headers=HEADER)
    assert (alice.status, bob.status) == (201, 201)
    assert BeliefRevision.objects.count() == 2


def test_an_observation_sent_without_a_claim_time_replays_though_now_has_moved(api):
    api.post(PATH, {"value": NEW}, headers=HEADER)
    with later(timedelta(minutes=30)):
        again = api.post(PATH, {"value": NEW}, headers=HEADER)
    assert again.status == 200, again.body


def test_a_refused_observation_does_not_use_up_its_key(api):
    refused = api.post(PATH, {"value": NEW, "taint_tier": "gossip"}, headers=HEADER)
    assert refused.status == 422
    assert api.post(PATH, {"value": NEW}, headers=HEADER).status == 201
    assert ObservationKey.objects.count() == 1


def test_without_a_key_every_post_is_a_new_observation(api):
    assert [api.post(PATH, {"value": NEW}).status for _ in range(3)] == [201, 201, 201]
    assert BeliefRevision.objects.count() == 3


def test_a_key_is_remembered_for_24_hours_then_a_new_use_records_anew(api):
    first = api.post(PATH, {"value": NEW}, headers=HEADER).body
    with later(timedelta(hours=23, minutes=59)):
        assert api.post(PATH, {"value": NEW}, headers=HEADER).status == 200
        assert api.post(PATH, {"value": OLD}, headers=HEADER).status == 409
    with later(timedelta(hours=24, seconds=1)):
        fresh = api.post(PATH, {"value": OLD}, headers=HEADER)
    assert fresh.status == 201, fresh.body
    assert fresh.body["sequence"] != first["sequence"]
    assert ObservationKey.objects.get().revision_id == fresh.body["sequence"]


def test_the_cleanup_job_deletes_observation_keys_past_their_window(api):
    from deposits.services.deposits import idempotency_expire

    api.post(PATH, {"value": NEW}, headers=HEADER)
    assert idempotency_expire()["deleted"] == 0
    assert idempotency_expire(now=timezone.now() + timedelta(hours=24, seconds=1))["deleted"] == 1
    assert not ObservationKey.objects.exists()
    assert BeliefRevision.objects.count() == 1


def test_the_openapi_document_declares_the_key_the_replay_and_the_conflict(api):
    from atlaso_site.api import api as ninja_api

    document = ninja_api.get_openapi_schema()
    operation = document["paths"]["/api/v1/users/{user_id}/beliefs/{key}/observations"]["post"]
    assert {"200", "201", "409"} <= {str(status) for status in operation["responses"]}
    assert "Idempotency-Key" in [p["name"] for p in operation["parameters"] if p["in"] == "header"]
    observation = document["components"]["schemas"]["ObservationIn"]["properties"]
    assert "idempotency_key" in observation

from __future__ import annotations

from datetime import timedelta
from unittest import mock

from django.utils import timezone

from deposits.models import Deposit, IdempotencyEntry, ScopeBag
from deposits.services.deposits import idempotency_expire

NOTE = {"content": "Alice prefers oat milk", "idempotency_key": "ak_note-1"}


def later(delta: timedelta):
    """Move the services' clock forward by `delta` (no sleeping)."""
    moment = timezone.now() + delta
    return mock.patch("deposits.services.deposits.timezone.now", return_value=moment)


def test_it_replays_the_same_key_and_payload_with_200_and_the_original_deposit(api):
    first = api.post("/users/alice/deposits", NOTE)
    again = api.post("/users/alice/deposits", NOTE)
    assert first.status == 201
    assert again.status == 200
    assert again.body["kind"] == "add_result"
    assert again.body["is_idempotent_replay"] is True
    assert again.body["deposit"] == first.body["deposit"]


def test_a_replay_stores_nothing_new(api):
    api.post("/users/alice/deposits", NOTE)
    api.post("/users/alice/deposits", NOTE)
    assert Deposit.objects.count() == 1
    assert IdempotencyEntry.objects.count() == 1
    assert ScopeBag.objects.get().live_open == 1


def test_it_answers_409_with_the_key_and_existing_id_for_a_different_payload(api):
    first = api.post("/users/alice/deposits", NOTE).body["deposit"]
    answer = api.post("/users/alice/deposits", {**NOTE, "content": "Alice prefers soy milk"})
    assert answer.status == 409
    assert answer.body["kind"] == "error"
    assert answer.body["error"]["code"] == "idempotency_conflict"
    assert answer.body["error"]["idempotency_key"] == NOTE["idempotency_key"]
    assert answer.body["error"]["existing_id"] == first["id"]
    assert Deposit.objects.count() == 1


def test_it_treats_an_omitted_default_and_the_default_sent_as_the_same_payload(api):
    api.post("/users/alice/deposits", NOTE)
    answer = api.post("/users/alice/deposits", {**NOTE, "polarity": "open", "tags": [], "scope": None})
    assert answer.status == 200
    assert answer.body["is_idempotent_replay"] is True


def test_it_scopes_a_key_to_one_user(api):
    alice = api.post("/users/alice/deposits", NOTE)
    bob = api.post("/users/bob/deposits", NOTE)
    assert alice.status == bob.status == 201
    assert alice.body["deposit"]["id"] != bob.body["deposit"]["id"]


def test_it_still_remembers_a_key_just_inside_the_24_hour_window(api):
    first = api.post("/users/alice/deposits", NOTE).body["deposit"]
    with later(timedelta(hours=23, minutes=59)):
        replay = api.post("/users/alice/deposits", NOTE)
        conflict = api.post("/users/alice/deposits", {**NOTE, "content": "other"})
    assert (replay.status, replay.body["deposit"]["id"]) == (200, first["id"])
    assert conflict.status == 409


def test_it_forgets_a_key_after_24_hours_and_writes_a_new_deposit(api):
    first = api.post("/users/alice/deposits", NOTE).body["deposit"]
    with later(timedelta(hours=24, seconds=1)):
        answer = api.post("/users/alice/deposits", {**NOTE, "content": "Alice now prefers soy milk"})
    assert answer.status == 201
    assert answer.body["is_idempotent_replay"] is False
    assert answer.body["deposit"]["id"] != first["id"]
    assert Deposit.objects.count() == 2
    entry = IdempotencyEntry.objects.get()
    assert str(entry.deposit_id) == answer.body["deposit"]["id"]


def test_it_writes_the_same_payload_again_after_24_hours_and_replays_the_new_one(api):
    first = api.post("/users/alice/deposits", NOTE).body["deposit"]
    with later(timedelta(days=2)):
        renewed = api.post("/users/alice/deposits", NOTE)
        replay = api.post("/users/alice/deposits", NOTE)
    assert renewed.status == 201
    assert renewed.body["deposit"]["id"] != first["id"]
    assert (replay.status, replay.body["deposit"]["id"]) == (200, renewed.body["deposit"]["id"])


def test_the_cleanup_job_deletes_only_expired_entries(api):
    api.post("/users/alice/deposits", NOTE)
    assert idempotency_expire(now=timezone.now() + timedelta(hours=23)) == {"deleted": 0}
    assert idempotency_expire(now=timezone.now() + timedelta(hours=24, seconds=1)) == {"deleted": 1}
    assert not IdempotencyEntry.objects.exists()
    assert Deposit.objects.count() == 1


def test_it_accepts_the_key_as_an_idempotency_key_header(api):
    body = {"content": NOTE["content"]}
    first = api.post("/users/alice/deposits", body, headers={"Idempotency-Key": "hdr-1"})
    again = api.post("/users/alice/deposits", body, headers={"Idempotency-Key": "hdr-1"})
    assert first.status == 201
    assert (again.status, again.body["deposit"]["id"]) == (200, first.body["deposit"]["id"])
    assert IdempotencyEntry.objects.get().key == "hdr-1"


def test_a_header_key_replays_a_write_first_sent_with_the_key_in_the_body(api):
    first = api.post("/users/alice/deposits", NOTE)
    again = api.post(
        "/users/alice/deposits",
        {"content": NOTE["content"]},
        headers={"Idempotency-Key": NOTE["idempotency_key"]},
    )
    assert (again.status, again.body["deposit"]["id"]) == (200, first.body["deposit"]["id"])


def test_it_accepts_a_header_that_agrees_with_the_body(api):
    answer = api.post("/users/alice/deposits", NOTE, headers={"Idempotency-Key": NOTE["idempotency_key"]})
    assert answer.status == 201


def test_it_answers_422_when_the_header_and_body_keys_disagree(api):
    answer = api.post("/users/alice/deposits", NOTE, headers={"Idempotency-Key": "another-key"})
    assert answer.status == 422
    assert answer.body["error"]["code"] == "validation_error"
    assert answer.body["error"]["field"] == "idempotency_key"
    assert not Deposit.objects.exists()
    assert not IdempotencyEntry.objects.exists()


def test_it_rejects_a_key_longer_than_200_characters(api):
    answer = api.post("/users/alice/deposits", {**NOTE, "idempotency_key": "k" * 201})
    assert answer.status == 422
    assert answer.body["error"]["field"] == "idempotency_key"
    assert not Deposit.objects.exists()


def test_it_replays_a_contradiction_with_the_same_key(api):
    old = api.post("/users/alice/deposits", {"content": "old"}).body["deposit"]["id"]
    body = {"content": "new", "contradicts": [old], "reason": "re-measured", "idempotency_key": "fix-1"}
    first = api.post("/users/alice/contradict", body)
    again = api.post("/users/alice/contradict", body)
    other_reason = api.post("/users/alice/contradict", {**body, "reason": "another reason"})
    assert first.status == 201
    assert (again.status, again.body["deposit"]["id"]) == (200, first.body["deposit"]["id"])
    assert other_reason.status == 409
    assert Deposit.objects.count() == 2

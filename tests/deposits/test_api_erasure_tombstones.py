"""An erased deposit's idempotency key stays remembered as erased for the rest of its 24 hours.

As domain.md, Writing, says: a retry answers 410 `erased`, writes nothing, and the store keeps
nothing of what was erased.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection

from beliefs.models import Belief, BeliefRevision
from deposits.models import (
    Contradiction,
    Deposit,
    DepositVector,
    EmbeddingPending,
    IdempotencyEntry,
    ScopeBag,
)
from tests.deposits.test_api_idempotency import later

# A word no other row holds, so finding it anywhere means the erasure left a trace.
SECRET = "Quokkaberg"
CLAIM = {
    "content": f"Alice lives at 12 {SECRET} Lane",
    "scope": {"model": "gpt-5", "dataset": f"{SECRET} interviews", "note": f"told on the {SECRET} call"},
    "tags": ["home"],
    "belief": {"key": "home_street", "value": f"{SECRET} Lane"},
}
KEY = "ak_home-1"


def erase(client, deposit_id: str, user: str = "alice") -> None:
    answer = client.delete(f"/users/{user}/deposits/{deposit_id}?mode=hard&reason=gdpr")
    assert answer.status == 200, answer.body


def add_and_erase(client, body: dict[str, Any] = CLAIM, key: str = KEY) -> str:
    answer = client.post("/users/alice/deposits", body, headers={"Idempotency-Key": key})
    assert answer.status == 201, answer.body
    erase(client, answer.body["deposit"]["id"])
    return answer.body["deposit"]["id"]


def assert_erased(answer, key: str = KEY) -> None:
    assert answer.status == 410, answer.body
    assert answer.body["kind"] == "error"
    assert answer.body["error"]["code"] == "erased"
    assert answer.body["error"]["idempotency_key"] == key
    assert answer.body["error"]["message"]


def rows_holding(needle: str) -> list[str]:
    """Every table (the search index's own tables too) whose rows spell `needle`, any case."""
    wanted = needle.lower()
    found = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor, include_views=False):
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            for row in cursor.fetchall():
                text = " ".join(
                    value.decode("latin-1") if isinstance(value, bytes | memoryview) else str(value)
                    for value in (bytes(v) if isinstance(v, memoryview) else v for v in row)
                )
                if wanted in text.lower():
                    found.append(table)
                    break
    return found


def test_a_retry_of_an_erased_deposits_key_answers_410_erased_and_writes_nothing(eraser):
    add_and_erase(eraser)
    again = eraser.post("/users/alice/deposits", CLAIM, headers={"Idempotency-Key": KEY})
    assert_erased(again)
    assert not Deposit.objects.exists()
    assert eraser.get("/users/alice/deposits").body["total"] == 0
    assert not ScopeBag.objects.exists()  # the bag it emptied went with it
    assert not BeliefRevision.objects.exists()
    assert not Belief.objects.exists()


def test_the_key_sent_in_the_body_is_refused_the_same_way(eraser):
    add_and_erase(eraser)
    assert_erased(eraser.post("/users/alice/deposits", {**CLAIM, "idempotency_key": KEY}))
    assert not Deposit.objects.exists()


def test_any_payload_under_an_erased_key_is_refused_as_erased_not_as_a_conflict(eraser):
    # Nothing of the erased payload is kept to compare with, so no write is let through either.
    add_and_erase(eraser)
    other = eraser.post(
        "/users/alice/deposits", {"content": "something else"}, headers={"Idempotency-Key": KEY}
    )
    assert_erased(other)
    assert not Deposit.objects.exists()


def embedding_rows(deposit_id: str) -> list[object]:
    """What recall by meaning keeps of a deposit: its vectors and its place in the backlog."""
    return [
        *DepositVector.objects.filter(deposit_id=deposit_id),
        *EmbeddingPending.objects.filter(deposit_id=deposit_id),
    ]


def test_after_erasure_the_store_keeps_nothing_of_the_erased_content(eraser):
    erased = add_and_erase(eraser)
    assert embedding_rows(erased) == []
    assert_erased(eraser.post("/users/alice/deposits", CLAIM, headers={"Idempotency-Key": KEY}))
    assert rows_holding(SECRET) == []
    assert rows_holding("quokkaberg") == []  # the index's stemmed lexeme, too
    # The key's tombstone: the owner, the key and the times, no deposit and no payload hash.
    entry = IdempotencyEntry.objects.get()
    assert (entry.user_id, entry.key, entry.deposit_id, entry.payload_hash) == ("alice", KEY, None, "")
    assert entry.erased_at is not None
    recall = eraser.get(f"/users/alice/recall?q={SECRET}")
    assert (recall.status, recall.body["items"]) == (200, [])


def test_an_erased_correction_cannot_come_back_through_its_key(eraser):
    old = eraser.post("/users/alice/deposits", {"content": "Alice lives on Elm Street"}).body["deposit"]["id"]
    body = {"content": f"Alice moved to {SECRET} Lane", "contradicts": [old], "reason": "she said so"}
    correction = eraser.post("/users/alice/contradict", body, headers={"Idempotency-Key": "ak_fix"})
    assert correction.status == 201, correction.body
    erase(eraser, correction.body["deposit"]["id"])
    assert_erased(
        eraser.post("/users/alice/contradict", body, headers={"Idempotency-Key": "ak_fix"}), "ak_fix"
    )
    assert list(Deposit.objects.values_list("content", flat=True)) == ["Alice lives on Elm Street"]
    assert not Contradiction.objects.exists()
    assert eraser.get(f"/users/alice/deposits/{old}").body["superseded_by"] == []


def test_a_bulk_reports_an_erased_key_as_that_items_failure_and_commits_the_others(eraser):
    items = [{**CLAIM, "idempotency_key": "b-1"}, {"content": "likes tea", "idempotency_key": "b-2"}]
    first = eraser.post("/users/alice/deposits/bulk", {"items": items}).body
    erase(eraser, first["committed"][0]["id"])
    fresh = {"content": "likes coffee", "idempotency_key": "b-3"}
    again = eraser.post("/users/alice/deposits/bulk", {"items": [*items, fresh]})
    assert again.status == 200, again.body
    [failure] = again.body["failed"]
    assert failure["index"] == 0
    assert (failure["error"]["code"], failure["error"]["idempotency_key"]) == ("erased", "b-1")
    assert [d["content"] for d in again.body["duplicates"]] == ["likes tea"]
    assert [d["content"] for d in again.body["committed"]] == ["likes coffee"]
    assert not Deposit.objects.filter(content=CLAIM["content"]).exists()


def test_a_bulk_in_abort_mode_commits_nothing_when_one_key_was_erased(eraser):
    eraser.post("/users/alice/deposits/bulk", {"items": [{**CLAIM, "idempotency_key": "b-1"}]})
    erase(eraser, Deposit.objects.get().pk)
    items = [{**CLAIM, "idempotency_key": "b-1"}, {"content": "likes coffee", "idempotency_key": "b-9"}]
    answer = eraser.post("/users/alice/deposits/bulk", {"items": items, "on_gate_reject": "abort"})
    assert answer.status == 200, answer.body
    assert [f["error"]["code"] for f in answer.body["failed"]] == ["erased"]
    assert not Deposit.objects.exists()


def test_an_erased_key_is_forgotten_after_its_24_hours_like_any_key(eraser):
    add_and_erase(eraser)
    with later(timedelta(hours=23, minutes=59)):
        assert_erased(eraser.post("/users/alice/deposits", CLAIM, headers={"Idempotency-Key": KEY}))
    with later(timedelta(hours=24, seconds=1)):
        answer = eraser.post(
            "/users/alice/deposits", {"content": "likes tea"}, headers={"Idempotency-Key": KEY}
        )
    assert answer.status == 201, answer.body
    entry = IdempotencyEntry.objects.get()
    assert (entry.erased_at, str(entry.deposit_id)) == (None, answer.body["deposit"]["id"])


def test_the_cleanup_job_deletes_an_erased_key_once_its_window_has_passed(eraser):
    from deposits.services.deposits import idempotency_expire

    add_and_erase(eraser)
    assert idempotency_expire()["deleted"] == 0
    with later(timedelta(hours=24, seconds=1)) as moved:
        assert idempotency_expire(now=moved.return_value)["deleted"] == 1
    assert not IdempotencyEntry.objects.exists()


def test_erasing_a_deposit_any_way_keeps_its_keys_as_erased(eraser):
    # The rule is the key's (its foreign key's on_delete), not one service's: an ORM delete by
    # any path leaves the same tombstone.
    answer = eraser.post("/users/alice/deposits", {"content": "likes tea"}, headers={"Idempotency-Key": KEY})
    Deposit.objects.filter(pk=answer.body["deposit"]["id"]).delete()
    entry = IdempotencyEntry.objects.get()
    assert (entry.deposit_id, entry.payload_hash) == (None, "")
    assert entry.erased_at is not None


@pytest.mark.parametrize("mode", ["soft", None])
def test_a_soft_retraction_leaves_the_key_a_replay_of_the_retracted_deposit(eraser, mode):
    first = eraser.post("/users/alice/deposits", CLAIM, headers={"Idempotency-Key": KEY}).body["deposit"]
    query = f"?mode={mode}" if mode else ""
    eraser.delete(f"/users/alice/deposits/{first['id']}{query}")
    again = eraser.post("/users/alice/deposits", CLAIM, headers={"Idempotency-Key": KEY})
    assert (again.status, again.body["deposit"]["id"]) == (200, first["id"])


def test_the_openapi_document_declares_410_on_the_writes_that_take_a_key(db):
    from atlaso_site.api import api as ninja_api

    paths = ninja_api.get_openapi_schema()["paths"]
    for path in ("/api/v1/users/{user_id}/deposits", "/api/v1/users/{user_id}/contradict"):
        responses = {str(status): schema for status, schema in paths[path]["post"]["responses"].items()}
        assert "410" in responses, path
        assert responses["410"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorOut")

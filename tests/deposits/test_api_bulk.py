from __future__ import annotations

from deposits.models import Deposit, IdempotencyEntry, ScopeBag

GOOD = {"content": "likes tea", "idempotency_key": "b-1"}
REJECTED = {"content": "works everywhere", "polarity": "positive", "idempotency_key": "b-2"}
ALSO_GOOD = {
    "content": "0.7 works",
    "polarity": "positive",
    "evidence_grade": "observed",
    "scope": {"model": "gpt-5", "dataset": "q1"},
    "idempotency_key": "b-3",
}


def bulk(api, items, mode=None):
    body = {"items": items} if mode is None else {"items": items, "on_gate_reject": mode}
    return api.post("/users/alice/deposits/bulk", body)


def test_skip_mode_commits_the_good_items_and_reports_the_failed_ones(api):
    answer = bulk(api, [GOOD, REJECTED, ALSO_GOOD])
    assert answer.status == 200
    body = answer.body
    assert body["kind"] == "add_many_result"
    assert [d["content"] for d in body["committed"]] == ["likes tea", "0.7 works"]
    assert body["duplicates"] == []
    [failure] = body["failed"]
    assert failure["index"] == 1
    assert failure["item"]["content"] == REJECTED["content"]
    assert failure["error"]["code"] == "gate_rejected"
    assert failure["error"]["gate_reason"].startswith(
        "positive/broad claim requires evidence_grade>=replicated"
    )
    assert (body["is_partial"], body["total"], body["all_succeeded"]) == (True, 3, False)
    assert sorted(Deposit.objects.values_list("content", flat=True)) == ["0.7 works", "likes tea"]
    assert sorted(IdempotencyEntry.objects.values_list("key", flat=True)) == ["b-1", "b-3"]


def test_it_reports_replayed_keys_as_duplicates_without_writing_again(api):
    first = bulk(api, [GOOD, ALSO_GOOD]).body
    again = bulk(api, [GOOD, ALSO_GOOD, {"content": "new", "idempotency_key": "b-4"}]).body
    assert [d["id"] for d in again["duplicates"]] == [d["id"] for d in first["committed"]]
    assert [d["content"] for d in again["committed"]] == ["new"]
    assert again["failed"] == []
    assert (again["is_partial"], again["total"], again["all_succeeded"]) == (False, 3, True)
    assert Deposit.objects.count() == 3


def test_it_reports_a_reused_key_with_another_payload_as_a_conflict(api):
    bulk(api, [GOOD])
    answer = bulk(api, [{**GOOD, "content": "likes coffee"}]).body
    [failure] = answer["failed"]
    assert failure["error"]["code"] == "idempotency_conflict"
    assert failure["error"]["existing_id"] == str(Deposit.objects.get().pk)
    assert answer["is_partial"] is False


def test_abort_mode_commits_nothing_when_one_item_fails(api):
    answer = bulk(api, [GOOD, ALSO_GOOD, REJECTED], mode="abort")
    assert answer.status == 200
    assert answer.body["committed"] == []
    assert [f["index"] for f in answer.body["failed"]] == [2]
    assert answer.body["all_succeeded"] is False
    assert not Deposit.objects.exists()
    assert not IdempotencyEntry.objects.exists()
    assert not ScopeBag.objects.filter(live_open__gt=0).exists()
    assert not ScopeBag.objects.filter(live_positive__gt=0).exists()


def test_abort_mode_commits_everything_when_nothing_fails(api):
    answer = bulk(api, [GOOD, ALSO_GOOD], mode="abort")
    assert len(answer.body["committed"]) == 2
    assert Deposit.objects.count() == 2


def test_it_reports_each_failure_with_its_own_error(api):
    items = [
        {"content": "  ", "idempotency_key": "e-1"},
        {"content": "x", "contradicts": ["nope"], "idempotency_key": "e-2"},
        {"content": "x", "scope": {"n": 2**64}, "idempotency_key": "e-3"},
    ]
    failed = bulk(api, items).body["failed"]
    assert [(f["index"], f["error"]["code"]) for f in failed] == [
        (0, "validation_error"),
        (1, "missing_contradicts"),
        (2, "validation_error"),
    ]
    assert failed[1]["error"]["missing"] == ["nope"]
    assert failed[2]["error"]["field"] == "scope.n"


def test_each_item_needs_an_idempotency_key(api):
    answer = bulk(api, [GOOD, {"content": "no key"}])
    assert answer.status == 422
    assert answer.body["error"]["code"] == "validation_error"
    assert answer.body["error"]["field"] == "items.1.idempotency_key"
    assert not Deposit.objects.exists()


def test_it_accepts_a_thousand_items_and_refuses_a_thousand_and_one(api):
    # Every item is refused by the gate, so the thousand cost no inserts.
    items = [{**REJECTED, "idempotency_key": f"k-{i}"} for i in range(1001)]
    at_limit = bulk(api, items[:1000])
    over = bulk(api, items)
    assert at_limit.status == 200
    assert at_limit.body["total"] == 1000
    assert over.status == 422
    assert over.body["error"]["code"] == "validation_error"
    assert over.body["error"]["field"] == "items"
    assert not Deposit.objects.exists()


def test_it_lists_the_modes_when_the_mode_is_unknown(api):
    answer = bulk(api, [GOOD], mode="ignore")
    assert answer.status == 422
    assert answer.body["error"]["field"] == "on_gate_reject"
    assert answer.body["error"]["allowed"] == ["skip", "abort"]
    assert not Deposit.objects.exists()

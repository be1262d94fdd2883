from __future__ import annotations

from deposits.domain.bags import bag_id
from deposits.domain.types import Scope
from deposits.models import Contradiction, Deposit, IdempotencyEntry, ScopeBag

SCOPE = {"model": "gpt-5", "dataset": "claims-q1"}
CLAIM = {
    "content": "Threshold 0.7 works",
    "polarity": "positive",
    "evidence_grade": "observed",
    "scope": SCOPE,
}
BAG = bag_id("alice", Scope(**SCOPE))


def add(api, body=CLAIM):
    answer = api.post("/users/alice/deposits", body)
    assert answer.status == 201, answer.body
    return answer.body["deposit"]["id"]


def correct(api, old, **fields):
    answer = api.post(
        "/users/alice/contradict",
        {"content": "It over-flags", "contradicts": [old], "reason": "re-measured", **fields},
    )
    assert answer.status == 201, answer.body
    return answer.body["deposit"]["id"]


def live(bag=BAG):
    row = ScopeBag.objects.get(id=bag)
    return {"positive": row.live_positive, "negative": row.live_negative, "open": row.live_open}


def test_a_soft_retraction_keeps_the_deposit_readable_with_its_reason(api):
    deposit = add(api)
    answer = api.delete(f"/users/alice/deposits/{deposit}?reason=measured+on+the+wrong+set")
    assert answer.status == 200
    assert answer.body == {
        "kind": "retract_result",
        "deposit_id": deposit,
        "mode": "soft",
        "contradicts_preserved": [],
    }
    read = api.get(f"/users/alice/deposits/{deposit}")
    assert read.status == 200
    assert (read.body["retracted"], read.body["retracted_reason"]) == (True, "measured on the wrong set")
    assert read.body["content"] == CLAIM["content"]


def test_a_soft_retraction_drops_the_deposit_from_the_default_list_and_the_bag(api):
    deposit = add(api)
    api.delete(f"/users/alice/deposits/{deposit}")
    assert api.get("/users/alice/deposits").body["total"] == 0
    assert live() == {"positive": 0, "negative": 0, "open": 0}


def test_a_soft_retraction_keeps_every_edge_and_lists_the_ids_that_pointed_at_it(api):
    old = add(api)
    first = correct(api, old, polarity="open")
    second = correct(api, old, polarity="open")
    answer = api.delete(f"/users/alice/deposits/{old}?mode=soft")
    assert answer.body["contradicts_preserved"] == [first, second]
    assert Contradiction.objects.count() == 2
    assert api.get(f"/users/alice/deposits/{old}").body["superseded_by"] == [first, second]


def test_retracting_twice_keeps_the_first_reason(api):
    deposit = add(api)
    api.delete(f"/users/alice/deposits/{deposit}?reason=first")
    again = api.delete(f"/users/alice/deposits/{deposit}?reason=second")
    assert again.status == 200
    assert api.get(f"/users/alice/deposits/{deposit}").body["retracted_reason"] == "first"
    assert live()["positive"] == 0


def test_a_hard_retraction_needs_the_erase_permission(api):
    deposit = add(api)
    answer = api.delete(f"/users/alice/deposits/{deposit}?mode=hard")
    assert answer.status == 403
    assert answer.body["error"]["code"] == "forbidden"
    assert Deposit.objects.filter(pk=deposit).exists()


def test_a_hard_retraction_erases_the_row_and_its_edges_and_keeps_its_key_as_erased(api, eraser):
    old = add(api)
    new = api.post(
        "/users/alice/contradict",
        {
            "content": "over-flags",
            "contradicts": [old],
            "reason": "r",
            "polarity": "open",
            "idempotency_key": "fix",
        },
    ).body["deposit"]["id"]
    answer = eraser.delete(f"/users/alice/deposits/{new}?mode=hard")
    assert answer.status == 200
    assert answer.body == {
        "kind": "retract_result",
        "deposit_id": new,
        "mode": "hard",
        "contradicts_preserved": [],
    }
    assert api.get(f"/users/alice/deposits/{new}").status == 404
    assert not Deposit.objects.filter(pk=new).exists()
    assert not Contradiction.objects.exists()
    # The key stays for the rest of its 24 hours as a tombstone that keeps nothing of the payload.
    kept = IdempotencyEntry.objects.values_list("key", "deposit_id", "payload_hash")
    assert list(kept) == [("fix", None, "")]


def test_a_deposit_an_erased_one_had_superseded_is_live_again(api, eraser):
    old = add(api)
    new = correct(api, old, polarity="open")
    assert live() == {"positive": 0, "negative": 0, "open": 1}
    eraser.delete(f"/users/alice/deposits/{new}?mode=hard")
    assert live() == {"positive": 1, "negative": 0, "open": 0}
    assert api.get(f"/users/alice/deposits/{old}").body["superseded_by"] == []


def test_erasing_a_correction_in_another_bag_revives_the_deposit_in_the_first(api, eraser):
    old = add(api)
    new = correct(api, old, scope={"model": "gpt-6"})
    other_bag = bag_id("alice", Scope(model="gpt-6"))
    assert live()["positive"] == 0
    assert live(other_bag)["open"] == 1
    eraser.delete(f"/users/alice/deposits/{new}?mode=hard")
    assert live()["positive"] == 1
    assert not ScopeBag.objects.filter(id=other_bag).exists()  # its only deposit was erased


def test_erasing_a_superseded_deposit_removes_the_edge_and_leaves_the_correction(api, eraser):
    old = add(api)
    new = correct(api, old, polarity="open")
    eraser.delete(f"/users/alice/deposits/{old}?mode=hard")
    assert api.get(f"/users/alice/deposits/{new}").body["contradicts"] == []
    assert live() == {"positive": 0, "negative": 0, "open": 1}


def test_an_erased_deposits_key_writes_nothing_again_within_its_window(api, eraser):
    # domain.md, Writing: a client's retry cannot bring an erased claim back (410 erased).
    body = {"content": "likes tea", "idempotency_key": "tea"}
    first = api.post("/users/alice/deposits", body).body["deposit"]["id"]
    eraser.delete(f"/users/alice/deposits/{first}?mode=hard")
    again = api.post("/users/alice/deposits", body)
    assert (again.status, again.body["error"]["code"]) == (410, "erased")
    assert not Deposit.objects.exists()


def test_retracting_an_unknown_or_malformed_or_foreign_id_answers_404(api, eraser):
    bobs = api.post("/users/bob/deposits", {"content": "bob's"}).body["deposit"]["id"]
    for path in (
        "/users/alice/deposits/00000000-0000-4000-8000-000000000000",
        "/users/alice/deposits/not-a-uuid",
        f"/users/alice/deposits/{bobs}",
        f"/users/alice/deposits/{bobs}?mode=hard",
    ):
        answer = eraser.delete(path)
        assert answer.status == 404
        assert answer.body["error"]["code"] == "not_found"
    assert Deposit.objects.get(pk=bobs).retracted_at is None

"""Bag live counts, kept by every write, equal a recount from scratch."""

from __future__ import annotations

from deposits.models import ScopeBag
from tests.deposits.recount import assert_bags_match_a_recount

A = {"model": "gpt-5", "dataset": "q1"}
B = {"model": "gpt-5", "dataset": "q2", "env": "prod"}


def claim(polarity, scope, content, **extra):
    body = {"content": content, "polarity": polarity, "scope": scope, **extra}
    if polarity == "positive":
        body["evidence_grade"] = "observed"
    if polarity in ("negative", "cautionary"):
        body["artifact_refs"] = ["s3://runs/1"]
    return body


def add(api, body, user="alice"):
    answer = api.post(f"/users/{user}/deposits", body)
    assert answer.status == 201, answer.body
    return answer.body["deposit"]["id"]


def correct(api, ids, **fields):
    body = {"content": "correction", "contradicts": ids, "reason": "re-measured", **fields}
    answer = api.post("/users/alice/contradict", body)
    assert answer.status == 201, answer.body
    return answer.body["deposit"]["id"]


def test_live_counts_equal_a_recount_after_a_mixed_history(api, eraser):
    p1 = add(api, claim("positive", A, "works"))
    p2 = add(api, claim("positive", {**A, "note": "rerun"}, "works again"))
    n1 = add(api, claim("negative", A, "fails"))
    c1 = add(api, claim("cautionary", B, "careful"))
    o1 = add(api, claim("open", B, "a question"))
    add(api, claim("positive", A, "bob's"), user="bob")
    add(api, claim("open", None, "unscoped"))
    assert_bags_match_a_recount()

    # Supersessions: in the same bag, across bags, and of two deposits at once.
    fix_same = correct(api, [n1], polarity="positive", evidence_grade="observed")
    fix_cross = correct(api, [c1], scope=A, polarity="open")
    fix_two = correct(api, [p1, o1], polarity="cautionary", artifact_refs=["s3://runs/2"])
    assert_bags_match_a_recount()

    # Soft retractions: of a superseded deposit, of a correction, of a live one.
    api.delete(f"/users/alice/deposits/{p1}")
    api.delete(f"/users/alice/deposits/{fix_cross}")
    api.delete(f"/users/alice/deposits/{p2}")
    assert_bags_match_a_recount()

    # Erasures: a correction (what it superseded comes back), a superseded deposit, a live one.
    eraser.delete(f"/users/alice/deposits/{fix_two}?mode=hard")
    eraser.delete(f"/users/alice/deposits/{n1}?mode=hard")
    eraser.delete(f"/users/alice/deposits/{fix_same}?mode=hard")
    assert_bags_match_a_recount()

    # A bulk write and a replay on top.
    items = [{**claim("negative", B, f"bulk {i}"), "idempotency_key": f"k{i}"} for i in range(3)]
    api.post("/users/alice/deposits/bulk", {"items": items})
    api.post("/users/alice/deposits/bulk", {"items": items})
    assert_bags_match_a_recount()
    assert ScopeBag.objects.filter(live_negative=3).count() == 1


def test_a_bag_emptied_by_retraction_counts_zero(api, eraser):
    kept = add(api, claim("positive", A, "works"))
    erased = add(api, claim("negative", B, "fails"))
    api.delete(f"/users/alice/deposits/{kept}")
    eraser.delete(f"/users/alice/deposits/{erased}?mode=hard")
    assert_bags_match_a_recount()
    assert not ScopeBag.objects.exclude(
        live_positive=0, live_negative=0, live_cautionary=0, live_open=0
    ).exists()

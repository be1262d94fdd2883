"""Recall flags: a hit is as confident as its bag, and no page size hides a conflict."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from deposits.schemas import SearchResultOut
from deposits.selectors.recall import SearchResult, recall
from tests.deposits.scenario import NARROW, by_id, claim, correct, now, put, put_many, retract

pytestmark = pytest.mark.django_db


def shown(hit: SearchResult) -> dict[str, Any]:
    """The hit as the API writes it."""
    return SearchResultOut.model_validate(hit).model_dump()


def flags(hit: SearchResult) -> dict[str, Any]:
    shown_hit = shown(hit)
    return {
        name: shown_hit[name]
        for name in (
            "is_confident",
            "has_disagreement",
            "agreement_score",
            "is_thin_evidence",
            "conflict_peers",
        )
    }


CONFIDENT = {
    "is_confident": True,
    "has_disagreement": False,
    "agreement_score": 1.0,
    "is_thin_evidence": False,
    "conflict_peers": [],
}
THIN = {**CONFIDENT, "is_confident": False, "is_thin_evidence": True}


def test_two_positives_in_one_bag_are_confident():
    put("positive", "threshold 0.7 is optimal")
    put("positive", "threshold 0.7 is optimal again")
    results = recall(user_id="alice", query="threshold")
    assert [flags(hit) for hit in results] == [CONFIDENT, CONFIDENT]
    assert {hit.explain() for hit in results} == {
        "Confident: 2 live positive claims agree in its bag and none disagree."
    }
    assert (results.is_confident, results.has_disagreement) == (True, False)
    assert results.explain() == "2 hits across 1 bag · 0 bags in conflict · confident"


def test_a_single_positive_is_thin_evidence_not_confident():
    put("positive", "threshold 0.7 is optimal")
    results = recall(user_id="alice", query="threshold")
    [hit] = results
    assert flags(hit) == THIN
    assert hit.explain() == "Not confident: its bag holds a single directional claim (thin evidence)."
    assert (results.is_confident, results.has_disagreement) == (False, False)
    assert results.explain() == "1 hit across 1 bag · 0 bags in conflict · not confident"


def test_a_positive_among_open_notes_is_still_thin():
    positive = put("positive", "threshold 0.7 is optimal")
    for question in ("threshold for staging?", "threshold for eu?", "threshold drift?"):
        put("open", question)
    results = recall(user_id="alice", query="threshold")
    assert len(results) == 4
    assert all(flags(hit) == THIN for hit in results)
    assert by_id(results)[positive].explain() == (
        "Not confident: its bag holds a single directional claim (thin evidence)."
    )
    assert results.is_confident is False


def test_four_positives_and_one_negative_disagree_with_agreement_0_8():
    start = now() - timedelta(days=6)
    positives = [
        put("positive", f"threshold 0.7 holds, run {i}", at=start + timedelta(days=i)) for i in range(4)
    ]
    negative = put("negative", "threshold 0.7 over-flags", at=start + timedelta(days=5))
    results = recall(user_id="alice", query="threshold")
    hits = by_id(results)
    split = {
        "is_confident": False,
        "has_disagreement": True,
        "agreement_score": 0.8,
        "is_thin_evidence": False,
    }
    for positive in positives:
        assert flags(hits[positive]) == {**split, "conflict_peers": [negative]}
    assert flags(hits[negative]) == {**split, "conflict_peers": positives[::-1]}
    assert hits[negative].explain() == "Not confident: its bag disagrees (4 positive, 1 negative)."
    assert (results.has_disagreement, results.is_confident) == (True, False)
    assert results.explain() == "5 hits across 1 bag · 1 bag in conflict · not confident"


def test_a_negative_and_a_cautionary_disagree_without_any_positive():
    negative = put("negative", "threshold 0.7 over-flags")
    cautionary = put("cautionary", "threshold 0.7 works but drifts")
    results = recall(user_id="alice", query="threshold")
    hits = by_id(results)
    assert flags(hits[negative]) == {
        "is_confident": False,
        "has_disagreement": True,
        "agreement_score": 0.5,
        "is_thin_evidence": False,
        "conflict_peers": [cautionary],
    }
    assert shown(hits[cautionary])["conflict_peers"] == [negative]
    assert hits[cautionary].explain() == "Not confident: its bag disagrees (1 negative, 1 cautionary)."
    assert results.has_disagreement is True


def test_open_notes_never_make_a_bag_disagree():
    put("positive", "threshold 0.7 is optimal")
    put("positive", "threshold 0.7 confirmed")
    question = put("open", "threshold for eu traffic?")
    results = recall(user_id="alice", query="threshold")
    assert [flags(hit) for hit in results] == [CONFIDENT] * 3
    assert by_id(results)[question].explain() == (
        "Confident: 2 live positive claims agree in its bag and none disagree."
    )
    assert (results.has_disagreement, results.conflict_bag_count) == (False, 0)


def test_a_bag_of_open_notes_only_is_not_confident():
    put("open", "threshold for eu traffic?")
    put("open", "threshold for staging?")
    results = recall(user_id="alice", query="threshold")
    assert all(shown(hit)["agreement_score"] == 0.0 and not hit.is_confident for hit in results)
    assert {hit.explain() for hit in results} == {
        "Not confident: its bag holds only open notes, no directional claim."
    }


def test_an_open_hit_in_a_split_bag_names_the_minority_as_its_peers():
    start = now() - timedelta(days=3)
    put("positive", "threshold 0.7 holds", at=start)
    put("positive", "threshold 0.7 holds again", at=start + timedelta(days=1))
    negative = put("negative", "threshold 0.7 over-flags", at=start + timedelta(days=2))
    question = put("open", "threshold: which is it?")
    hit = by_id(recall(user_id="alice", query="threshold"))[question]
    assert (hit.has_disagreement, list(hit.conflict_peers)) == (True, [negative])


def test_an_open_hit_in_a_tied_bag_takes_the_side_written_last_as_the_majority():
    start = now() - timedelta(days=3)
    older = put("negative", "threshold 0.7 over-flags", at=start)
    put("positive", "threshold 0.7 holds", at=start + timedelta(days=1))
    question = put("open", "threshold: which is it?")
    hit = by_id(recall(user_id="alice", query="threshold"))[question]
    # One each: the tie goes to the newest deposit's polarity, so the negative is the minority.
    assert list(hit.conflict_peers) == [older]


def test_a_hit_names_at_most_fifty_peers_the_newest_first():
    start = now() - timedelta(days=60)
    negatives = [
        put("negative", f"threshold 0.7 over-flags, run {day}", at=start + timedelta(days=day))
        for day in range(55)
    ]
    positive = put("positive", "threshold 0.7 holds")
    hit = by_id(recall(user_id="alice", query="holds"))[positive]
    assert list(hit.conflict_peers) == negatives[::-1][:50]


def test_a_different_env_is_a_different_bag():
    prod = put("positive", "threshold 0.7 is optimal", NARROW)
    staging = put("positive", "threshold 0.7 is optimal", {**NARROW, "env": "staging"})
    results = recall(user_id="alice", query="threshold")
    hits = by_id(results)
    assert hits[prod].bag_id != hits[staging].bag_id
    assert flags(hits[prod]) == flags(hits[staging]) == THIN
    assert results.bag_count == 2


def test_equal_facets_with_a_different_note_share_a_bag():
    first = put("positive", "threshold 0.7 is optimal", {**NARROW, "note": "first run"})
    rerun = put("positive", "threshold 0.7 is optimal", {**NARROW, "note": "rerun on fresh data"})
    results = recall(user_id="alice", query="threshold")
    hits = by_id(results)
    assert hits[first].bag_id == hits[rerun].bag_id
    assert [flags(hit) for hit in results] == [CONFIDENT, CONFIDENT]
    assert results.bag_count == 1


def test_a_conflict_bag_beyond_the_limit_still_counts():
    flood = [claim("positive", f"threshold works, run {i}", {**NARROW, "n": i % 5}) for i in range(500)]
    put_many(flood)
    near = [put("positive", "threshold fails sometimes", {**NARROW, "seed": 1}),
            put("negative", "threshold fails sometimes", {**NARROW, "seed": 1})]  # fmt: skip
    month_ago = now() - timedelta(days=30)
    far = [put("positive", "threshold fails sometimes", {**NARROW, "seed": 2}, at=month_ago),
           put("negative", "threshold fails sometimes", {**NARROW, "seed": 2}, at=month_ago)]  # fmt: skip
    results = recall(user_id="alice", query="threshold", limit=2)
    assert sorted(hit.id for hit in results) == sorted(near)
    assert not {hit.id for hit in results} & set(far)
    assert (results.has_disagreement, results.is_confident) == (True, False)
    assert (results.bag_count, results.conflict_bag_count) == (7, 2)
    assert results.explain().endswith(" across 7 bags · 2 bags in conflict · not confident")


def test_a_confident_bag_beyond_the_limit_still_makes_the_results_confident():
    put_many([claim("positive", f"threshold works, run {i}", {**NARROW, "n": i}) for i in range(20)])
    month_ago = now() - timedelta(days=30)
    settled = [put("positive", "threshold works", {**NARROW, "seed": 9}, at=month_ago) for _ in range(2)]
    results = recall(user_id="alice", query="threshold", limit=10)
    assert not {hit.id for hit in results} & set(settled)
    assert not any(hit.is_confident for hit in results)
    assert results.is_confident is True
    assert results.explain().endswith(" across 21 bags · 0 bags in conflict · confident")


@pytest.mark.parametrize(
    ("bags", "confident"),
    [
        ({"settled": ["positive", "positive"], "thin": ["negative"]}, True),
        ({"thin": ["positive"], "other": ["negative"], "notes": ["open", "open"]}, False),
        ({"settled": ["positive", "positive"], "split": ["positive", "cautionary"]}, False),
    ],
    ids=["a-confident-bag", "no-confident-bag", "a-confident-bag-and-a-split-one"],
)
def test_results_are_confident_only_when_some_bag_is_and_none_disagrees(bags, confident):
    for env, polarities in bags.items():
        for polarity in polarities:
            put(polarity, f"threshold claim, {polarity}", {**NARROW, "env": env})
    results = recall(user_id="alice", query="threshold")
    assert results.bag_count == len(bags)
    assert results.is_confident is confident


def test_contradicting_the_minority_ends_the_disagreement_and_keeps_the_record(api):
    for i in range(4):
        api.post("/users/alice/deposits", claim("positive", f"threshold 0.7 holds, run {i}"))
    answer = api.post("/users/alice/deposits", claim("negative", "threshold 0.7 over-flags"))
    negative = answer.body["deposit"]
    before = api.get("/users/alice/recall?q=threshold").body
    assert before["has_disagreement"] is True
    fix = api.post(
        "/users/alice/contradict",
        {**claim("positive", "threshold 0.7 holds; the over-flagging was a bad label"),
         "scope": None, "contradicts": [negative["id"]], "reason": "re-labelled"},
    )  # fmt: skip
    assert fix.status == 201, fix.body
    correction = fix.body["deposit"]["id"]

    after = api.get("/users/alice/recall?q=threshold").body
    assert (after["has_disagreement"], after["is_confident"], after["conflict_bag_count"]) == (False, True, 0)
    assert negative["id"] not in {hit["id"] for hit in after["items"]}
    assert all(hit["is_confident"] and hit["agreement_score"] == 1.0 for hit in after["items"])

    bag = api.get(f"/users/alice/bags/{before['items'][0]['bag_id']}").body
    assert (bag["has_disagreement"], bag["is_confident"], bag["resolved"]) == (False, True, True)
    assert bag["counts"] == {"positive": 5, "negative": 0, "cautionary": 0, "open": 0}
    assert {d["id"]: d["state"] for d in bag["deposits"]}[negative["id"]] == "superseded"

    record = api.get(f"/users/alice/deposits/{negative['id']}")
    assert (record.status, record.body["content"], record.body["superseded_by"]) == (
        200,
        "threshold 0.7 over-flags",
        [correction],
    )
    audit = api.get("/users/alice/recall?q=threshold&include_superseded=true").body
    superseded = {hit["id"]: hit["superseded"] for hit in audit["items"]}
    assert superseded[negative["id"]] is True
    assert superseded[correction] is False
    assert sum(superseded.values()) == 1


def test_a_soft_retracted_deposit_is_gone_from_recall():
    kept = put("positive", "threshold 0.7 is optimal")
    gone = put("negative", "threshold 0.7 over-flags")
    retract(gone)
    results = recall(user_id="alice", query="threshold")
    assert [hit.id for hit in results] == [kept]
    assert (results.has_disagreement, results.bag_count) == (False, 1)
    assert [hit.id for hit in recall(user_id="alice", query="threshold", include_superseded=True)] == [kept]


def test_a_correction_in_a_clean_bag_leaves_the_old_claim_out_of_recall():
    old = put("positive", "threshold 0.7 is optimal")
    new = correct([old], "threshold 0.65 is optimal")
    assert [hit.id for hit in recall(user_id="alice", query="threshold")] == [new]

"""Recall order: conflict bags first, then text rank × recency, with places kept per polarity."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest

from deposits.selectors.recall import recall
from tests.deposits.scenario import NARROW, claim, now, put, put_many

pytestmark = pytest.mark.django_db


def test_the_newer_of_two_equal_positives_ranks_first():
    today = now()
    older = put("positive", "threshold 0.7 is optimal", at=today - timedelta(days=2))
    newer = put("positive", "threshold 0.7 is optimal", at=today - timedelta(days=1))
    first, second = recall(user_id="alice", query="threshold", now=today)
    assert (first.id, second.id) == (newer, older)
    # Same text, one day apart: the older keeps 2^(-1/14) of the newer's score.
    assert second.score / first.score == pytest.approx(2 ** (-1 / 14))


def test_a_negative_outlasts_a_positive_of_the_same_age_and_text():
    today = now()
    month_ago = today - timedelta(days=30)
    positive = put("positive", "threshold 0.7 over-flags", {**NARROW, "env": "eu"}, at=month_ago)
    negative = put("negative", "threshold 0.7 over-flags", {**NARROW, "env": "us"}, at=month_ago)
    first, second = recall(user_id="alice", query="threshold", now=today)
    assert (first.id, second.id) == (negative, positive)
    # Half-lives of 90 and 14 days: after 30 days the negative keeps 2^(-30/90), the positive 2^(-30/14).
    assert second.score / first.score == pytest.approx(2 ** (-30 / 14) / 2 ** (-30 / 90))


def test_a_bag_in_conflict_comes_before_better_scored_hits():
    today = now()
    fresh = put("positive", "threshold 0.7 is optimal", {**NARROW, "env": "eu"}, at=today)
    two_months_ago = today - timedelta(days=60)
    split = [
        put("positive", "threshold 0.7 is optimal", at=two_months_ago),
        put("negative", "threshold 0.7 over-flags", at=two_months_ago),
    ]
    hits = list(recall(user_id="alice", query="threshold", now=today))
    assert {hit.id for hit in hits[:2]} == set(split)
    assert hits[2].id == fresh
    assert hits[2].score > max(hit.score for hit in hits[:2])


def flood_and_minorities(minorities: dict[str, int]) -> None:
    """50 fresh positives, and older claims of other polarities, each polarity in its own bag."""
    today = now()
    put_many([claim("positive", f"threshold holds, run {i}") for i in range(50)], at=today)
    old = today - timedelta(days=200)
    for polarity, count in minorities.items():
        scope = {**NARROW, "env": polarity}
        put_many([claim(polarity, f"threshold {polarity} claim {i}", scope) for i in range(count)], at=old)


def test_a_flood_of_positives_cannot_hide_negatives_cautions_or_open_questions():
    flood_and_minorities({"negative": 5, "cautionary": 5, "open": 5})
    results = recall(user_id="alice", query="threshold", limit=10)
    assert Counter(hit.polarity for hit in results) == {
        "positive": 3,
        "negative": 3,
        "cautionary": 2,
        "open": 2,
    }
    # Without the reserved places these would all have lost to the fresher positives.
    weakest_positive = min(hit.score for hit in results if hit.polarity == "positive")
    assert all(hit.score < weakest_positive for hit in results if hit.polarity != "positive")


def test_places_a_polarity_cannot_fill_go_to_the_best_remaining_hits():
    flood_and_minorities({"negative": 1})
    results = recall(user_id="alice", query="threshold", limit=10)
    assert Counter(hit.polarity for hit in results) == {"positive": 9, "negative": 1}


def test_a_limit_above_the_matches_returns_every_match():
    flood_and_minorities({"negative": 2, "open": 1})
    results = recall(user_id="alice", query="threshold", limit=1000)
    assert len(results) == 53

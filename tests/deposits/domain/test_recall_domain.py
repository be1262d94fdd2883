"""Recall rules without a database: query words, recency decay, the slice, explain()."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from deposits.domain.recall import (
    MAX_QUERY_WORDS,
    Candidate,
    EmptyQueryError,
    decay,
    explain_results,
    query_words,
    reserved_places,
    slice_hits,
)
from deposits.domain.types import POLARITIES


def test_it_reads_a_query_as_distinct_lowercased_words_in_order():
    assert query_words("Threshold THRESHOLD over-flags in prod") == [
        "threshold",
        "over",
        "flags",
        "in",
        "prod",
    ]


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ('a:b (c)* "d', ["a", "b", "c", "d"]),
        ("NOT", ["not"]),
        ("-x", ["x"]),
        ("' OR 1=1 --", ["or", "1"]),
        ("NEAR(alpha beta)", ["near", "alpha", "beta"]),
        ("col:x^2 AND y*", ["col", "x", "2", "and", "y"]),
        ("snake_case", ["snake", "case"]),
    ],
)
def test_it_turns_search_syntax_into_plain_words(query, words):
    assert query_words(query) == words


def test_it_keeps_letters_of_every_script_and_drops_emoji():
    assert query_words("café 漢字 😀 Straße") == ["café", "漢字", "straße"]


@pytest.mark.parametrize("query", ["", "   ", "!!!", "😀🎉", "* -- ()", "\u200b", None])
def test_it_refuses_a_query_without_a_word(query):
    with pytest.raises(EmptyQueryError, match="q holds no words to search for"):
        query_words(query)


def test_it_searches_only_the_first_words_of_a_very_long_query():
    words = [f"w{i}" for i in range(MAX_QUERY_WORDS + 50)]
    assert query_words(" ".join(words)) == words[:MAX_QUERY_WORDS]


def test_a_fresh_claim_keeps_its_whole_weight():
    for polarity in POLARITIES:
        assert decay(0, polarity) == 1.0


@pytest.mark.parametrize(
    ("polarity", "half_life"), [("positive", 14), ("open", 14), ("negative", 90), ("cautionary", 90)]
)
def test_a_claim_loses_half_its_weight_every_half_life(polarity, half_life):
    assert decay(half_life, polarity) == pytest.approx(0.5)
    assert decay(2 * half_life, polarity) == pytest.approx(0.25)


def test_a_negative_decays_slower_than_a_positive_of_the_same_age():
    assert decay(30, "negative") == pytest.approx(2 ** (-30 / 90))
    assert decay(30, "positive") == pytest.approx(2 ** (-30 / 14))
    assert decay(30, "negative") > 3 * decay(30, "positive")


def test_a_claim_dated_after_the_clock_counts_as_fresh():
    assert decay(-5, "positive") == 1.0


@given(
    younger=st.floats(min_value=0, max_value=10_000),
    extra=st.floats(min_value=0, max_value=10_000),
    polarity=st.sampled_from(POLARITIES),
)
def test_weight_never_grows_with_age_and_stays_within_0_and_1(younger, extra, polarity):
    older = younger + extra
    assert 0.0 <= decay(older, polarity) <= decay(younger, polarity) <= 1.0


@pytest.mark.parametrize(
    ("limit", "places"),
    [
        (10, {"positive": 3, "negative": 3, "cautionary": 2, "open": 2}),
        (1, {"positive": 1, "negative": 1, "cautionary": 1, "open": 1}),
        (3, {"positive": 1, "negative": 1, "cautionary": 1, "open": 1}),
        (7, {"positive": 2, "negative": 2, "cautionary": 1, "open": 1}),
        (100, {"positive": 30, "negative": 30, "cautionary": 20, "open": 20}),
        (1000, {"positive": 300, "negative": 300, "cautionary": 200, "open": 200}),
    ],
)
def test_each_polarity_has_its_share_of_the_limit_and_at_least_one_place(limit, places):
    assert reserved_places(limit) == places


def candidate(name: str, polarity: str, score: float, *, in_conflict: bool = False) -> Candidate:
    return Candidate(id=name, bag_id=f"bag_{name}", polarity=polarity, score=score, in_conflict=in_conflict)


def test_a_flood_of_positives_cannot_hide_the_other_polarities():
    flood = [candidate(f"p{i:02}", "positive", 100.0 - i) for i in range(50)]
    others = [
        *(candidate(f"n{i}", "negative", 1.0 - i / 10) for i in range(5)),
        *(candidate(f"c{i}", "cautionary", 1.0 - i / 10) for i in range(5)),
        *(candidate(f"o{i}", "open", 1.0 - i / 10) for i in range(5)),
    ]
    chosen = [c.id for c in slice_hits(flood + others, 10)]
    assert chosen == ["p00", "p01", "p02", "c0", "n0", "o0", "c1", "n1", "o1", "n2"]


def test_places_a_polarity_leaves_unused_go_to_the_best_remaining_hits():
    flood = [candidate(f"p{i:02}", "positive", 100.0 - i) for i in range(50)]
    chosen = [c.id for c in slice_hits([*flood, candidate("n0", "negative", 0.1)], 10)]
    assert chosen == [f"p{i:02}" for i in range(9)] + ["n0"]


def test_conflict_bags_come_first_then_the_best_score():
    hits = [
        candidate("fresh", "positive", 9.0),
        candidate("split-low", "negative", 0.2, in_conflict=True),
        candidate("split-high", "positive", 0.5, in_conflict=True),
        candidate("middle", "negative", 5.0),
    ]
    assert [c.id for c in slice_hits(hits, 10)] == ["split-high", "split-low", "fresh", "middle"]


def test_it_returns_every_hit_when_fewer_match_than_the_limit():
    hits = [candidate("a", "open", 1.0), candidate("b", "positive", 2.0)]
    assert [c.id for c in slice_hits(hits, 10)] == ["b", "a"]
    assert slice_hits([], 10) == []


candidates = st.lists(
    st.builds(
        candidate,
        name=st.uuids().map(str),
        polarity=st.sampled_from(POLARITIES),
        score=st.floats(min_value=0, max_value=1e6, allow_nan=False),
        in_conflict=st.booleans(),
    ),
    max_size=60,
    unique_by=lambda c: c.id,
)


@given(hits=candidates, limit=st.integers(min_value=1, max_value=40))
def test_the_slice_holds_min_of_limit_and_matches_distinct_hits_in_display_order(hits, limit):
    chosen = slice_hits(hits, limit)
    assert len(chosen) == min(limit, len(hits))
    assert len({c.id for c in chosen}) == len(chosen)
    assert chosen == sorted(chosen, key=lambda c: c.order_key)


@given(hits=candidates, limit=st.integers(min_value=4, max_value=40))
def test_every_polarity_gets_its_reserved_places_when_it_has_the_hits(hits, limit):
    chosen = slice_hits(hits, limit)
    for polarity, places in reserved_places(limit).items():
        available = sum(c.polarity == polarity for c in hits)
        assert sum(c.polarity == polarity for c in chosen) >= min(places, available)


@given(hits=candidates, limit=st.integers(min_value=1, max_value=40))
def test_a_conflict_hit_is_never_left_out_for_a_better_scored_hit_of_its_polarity(hits, limit):
    chosen_ids = {c.id for c in slice_hits(hits, limit)}
    for left_out in (c for c in hits if c.id not in chosen_ids and c.in_conflict):
        assert not any(
            c.id in chosen_ids and c.polarity == left_out.polarity and not c.in_conflict for c in hits
        )


@pytest.mark.parametrize(
    ("counts", "confident", "text"),
    [
        ((1, 1, 0), False, "1 hit across 1 bag · 0 bags in conflict · not confident"),
        ((5, 2, 1), False, "5 hits across 2 bags · 1 bag in conflict · not confident"),
        ((2, 1, 0), True, "2 hits across 1 bag · 0 bags in conflict · confident"),
        ((7, 3, 2), False, "7 hits across 3 bags · 2 bags in conflict · not confident"),
        ((0, 0, 0), False, "0 hits across 0 bags · 0 bags in conflict · not confident"),
    ],
)
def test_results_explain_themselves_in_one_line(counts, confident, text):
    hits, bags, conflicts = counts
    assert (
        explain_results(hit_count=hits, bag_count=bags, conflict_bag_count=conflicts, is_confident=confident)
        == text
    )

"""A bag's flags from its live counts, its conflict peers, and a hit's explain sentence."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from deposits.domain.bags import BagStats, explain_hit, peer_polarities

EARLY = datetime(2026, 1, 1, tzinfo=UTC)
LATE = datetime(2026, 2, 1, tzinfo=UTC)


def flags(stats: BagStats) -> tuple[float, bool, bool, bool]:
    return (stats.agreement_score, stats.has_disagreement, stats.is_thin_evidence, stats.is_confident)


@pytest.mark.parametrize(
    ("stats", "expected"),
    [
        (BagStats(positive=2), (1.0, False, False, True)),
        (BagStats(positive=1), (1.0, False, True, False)),
        (BagStats(positive=1, open=5), (1.0, False, True, False)),
        (BagStats(positive=4, negative=1), (0.8, True, False, False)),
        (BagStats(negative=1, cautionary=1), (0.5, True, False, False)),
        (BagStats(positive=2, open=3), (1.0, False, False, True)),
        (BagStats(open=3), (0.0, False, True, False)),
        (BagStats(), (0.0, False, True, False)),
        (BagStats(negative=3), (1.0, False, False, True)),
    ],
    ids=["two-positive", "one-positive", "positive-and-opens", "four-to-one", "negative-cautionary",
         "opens-never-conflict", "only-open", "empty", "three-negative"],
)  # fmt: skip
def test_a_bags_flags_follow_the_rule(stats, expected):
    assert flags(stats) == pytest.approx(expected)


def test_the_dominant_polarity_is_the_most_held_and_a_tie_goes_to_the_newest():
    assert BagStats(positive=4, negative=1).dominant_polarity == "positive"
    assert BagStats(positive=1, negative=1, newest=(EARLY, LATE, None)).dominant_polarity == "negative"
    assert BagStats(positive=1, negative=1, newest=(LATE, EARLY, None)).dominant_polarity == "positive"
    assert BagStats(positive=1, cautionary=1, newest=(None, None, EARLY)).dominant_polarity == "cautionary"
    assert BagStats(open=2).dominant_polarity is None


def test_a_hits_peers_are_the_other_directional_polarities_of_its_bag():
    stats = BagStats(positive=4, negative=1, open=1)
    assert peer_polarities(stats, "positive") == ("negative",)
    assert peer_polarities(stats, "negative") == ("positive",)
    assert peer_polarities(BagStats(positive=1, negative=1, cautionary=1), "cautionary") == (
        "positive",
        "negative",
    )


def test_an_open_hits_peers_are_the_directional_claims_outside_the_dominant_polarity():
    assert peer_polarities(BagStats(positive=4, negative=1, cautionary=2, open=1), "open") == (
        "negative",
        "cautionary",
    )
    assert peer_polarities(BagStats(positive=2, open=1), "open") == ()


@pytest.mark.parametrize(
    ("stats", "sentence"),
    [
        (BagStats(positive=4, negative=1), "Not confident: its bag disagrees (4 positive, 1 negative)."),
        (
            BagStats(negative=1, cautionary=2, open=3),
            "Not confident: its bag disagrees (1 negative, 2 cautionary).",
        ),
        (BagStats(open=2), "Not confident: its bag holds only open notes, no directional claim."),
        (
            BagStats(positive=1, open=2),
            "Not confident: its bag holds a single directional claim (thin evidence).",
        ),
        (BagStats(positive=2), "Confident: 2 live positive claims agree in its bag and none disagree."),
        (
            BagStats(cautionary=3, open=1),
            "Confident: 3 live cautionary claims agree in its bag and none disagree.",
        ),
    ],
)
def test_a_hit_says_in_one_sentence_why_it_is_or_is_not_confident(stats, sentence):
    assert explain_hit(stats) == sentence


counts = st.integers(min_value=0, max_value=50)


@given(positive=counts, negative=counts, cautionary=counts, open_=counts)
def test_confident_means_one_directional_polarity_held_at_least_twice(positive, negative, cautionary, open_):
    stats = BagStats(positive=positive, negative=negative, cautionary=cautionary, open=open_)
    held = [n for n in (positive, negative, cautionary) if n]
    assert 0.0 <= stats.agreement_score <= 1.0
    assert stats.is_confident == (len(held) == 1 and held[0] >= 2)
    assert stats.has_disagreement == (len(held) >= 2)
    assert explain_hit(stats).startswith("Confident" if stats.is_confident else "Not confident")

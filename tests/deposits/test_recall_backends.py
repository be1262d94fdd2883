"""Both search backends give the same flags for the same data.

CI runs this module on SQLite and on PostgreSQL; each run compares recall's flags over one
fixed field to the same hard-coded expectations, so a backend that drifts fails here.
Scores differ between backends (bm25 against ts_rank) and are not compared.
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

import pytest
from django.db import connection

from deposits.search import search_backend
from deposits.selectors.recall import recall
from tests.deposits.scenario import NARROW, claim, correct, put_many, retract

pytestmark = pytest.mark.django_db

# One bag per word (its env), written as these polarities.
FIELD: dict[str, list[str]] = {
    "amber": ["positive", "positive"],
    "basil": ["positive"],
    "cedar": ["positive", "open", "open", "open"],
    "delta": ["positive", "positive", "positive", "positive", "negative"],
    "ember": ["negative", "cautionary"],
    "fjord": ["open", "open"],
    "grove": ["negative", "negative", "negative"],
    "harbor": ["positive", "negative"],  # the negative is then corrected by a positive
    "iris": ["positive", "positive"],  # one is then retracted
}


class Expected(NamedTuple):
    hits: int
    flags: tuple[float, bool, bool, bool]  # agreement, disagreement, thin, confident
    peers: dict[str, int]  # conflict peers per hit polarity
    explain: str


EXPECTED: dict[str, Expected] = {
    "amber": Expected(2, (1.0, False, False, True), {"positive": 0}, "2 hits across 1 bag · 0 bags in conflict · confident"),
    "basil": Expected(1, (1.0, False, True, False), {"positive": 0}, "1 hit across 1 bag · 0 bags in conflict · not confident"),
    "cedar": Expected(4, (1.0, False, True, False), {"positive": 0, "open": 0}, "4 hits across 1 bag · 0 bags in conflict · not confident"),
    "delta": Expected(5, (0.8, True, False, False), {"positive": 1, "negative": 4}, "5 hits across 1 bag · 1 bag in conflict · not confident"),
    "ember": Expected(2, (0.5, True, False, False), {"negative": 1, "cautionary": 1}, "2 hits across 1 bag · 1 bag in conflict · not confident"),
    "fjord": Expected(2, (0.0, False, True, False), {"open": 0}, "2 hits across 1 bag · 0 bags in conflict · not confident"),
    "grove": Expected(3, (1.0, False, False, True), {"negative": 0}, "3 hits across 1 bag · 0 bags in conflict · confident"),
    "harbor": Expected(2, (1.0, False, False, True), {"positive": 0}, "2 hits across 1 bag · 0 bags in conflict · confident"),
    "iris": Expected(1, (1.0, False, True, False), {"positive": 0}, "1 hit across 1 bag · 0 bags in conflict · not confident"),
}  # fmt: skip


@pytest.fixture
def field() -> None:
    bodies = [
        claim(polarity, f"{word} claim {i}", {**NARROW, "env": word})
        for word, polarities in FIELD.items()
        for i, polarity in enumerate(polarities)
    ]
    ids = dict(zip([body["content"] for body in bodies], put_many(bodies), strict=True))
    correct([ids["harbor claim 1"]], "harbor claim corrected")
    retract(ids["iris claim 1"])


def test_recall_runs_on_the_configured_databases_backend():
    expected = {"postgresql": "PostgresBackend", "sqlite": "SqliteBackend"}[connection.vendor]
    assert type(search_backend()).__name__ == expected


@pytest.mark.parametrize("word", EXPECTED)
def test_a_bag_gets_the_same_flags_on_every_backend(field, word):
    expected = EXPECTED[word]
    results = recall(user_id="alice", query=word)
    assert len(results) == expected.hits
    for hit in results:
        stats = hit.stats
        flags = (stats.agreement_score, stats.has_disagreement, stats.is_thin_evidence, stats.is_confident)
        assert flags == pytest.approx(expected.flags)
        assert len(hit.conflict_peers) == expected.peers[hit.polarity]
    assert Counter(hit.polarity for hit in results).keys() == expected.peers.keys()
    in_conflict = expected.flags[1]
    assert (results.bag_count, results.conflict_bag_count) == (1, int(in_conflict))
    assert (results.has_disagreement, results.is_confident) == (in_conflict, expected.flags[3])
    assert results.explain() == expected.explain


def test_the_whole_field_gets_the_same_flags_on_every_backend(field):
    results = recall(user_id="alice", query=" ".join(EXPECTED), limit=1000)
    assert (len(results), results.bag_count, results.conflict_bag_count) == (22, 9, 2)
    assert (results.has_disagreement, results.is_confident) == (True, False)
    assert results.explain() == "22 hits across 9 bags · 2 bags in conflict · not confident"
    # Conflict bags first: delta's and ember's seven hits lead.
    assert {hit.content.split()[0] for hit in list(results)[:7]} == {"delta", "ember"}
    assert Counter(hit.is_confident for hit in results) == {True: 7, False: 15}


def test_superseded_and_retracted_deposits_are_treated_alike_on_every_backend(field):
    audit = recall(user_id="alice", query="harbor iris", include_superseded=True)
    assert sorted((hit.content, hit.superseded) for hit in audit) == [
        ("harbor claim 0", False),
        ("harbor claim 1", True),
        ("harbor claim corrected", False),
        ("iris claim 0", False),
    ]

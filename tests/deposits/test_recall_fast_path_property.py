"""Random stores give the same recall from every fast path as from scoring every match.

Stores of a few owners: random sizes, ages (one day to two years), polarities, bags that end up
in conflict, corrections that supersede and retractions; then random queries and limits. On
PostgreSQL each way the walk can be planned (everything scored, every word walked in small
windows, tiers, rare words in full) must give the hits, order and flags of the statement that
scores every match; on SQLite, the owner's rowid range of the full-text table must give what
matching every owner's entries gives.
"""

from __future__ import annotations

import uuid
from contextlib import AbstractContextManager
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deposits.domain.recall import query_words, slice_hits
from deposits.domain.types import POLARITIES
from deposits.domain.validation import validate_bulk
from deposits.models import Deposit
from deposits.search.base import SearchBackend, SearchRequest
from deposits.search.postgres import PostgresBackend
from deposits.search.sqlite import SqliteBackend
from deposits.services.deposits import deposit_add_many
from tests.deposits.recall_plans import forced, recall_plans
from tests.deposits.recount import assert_conflict_copies_match
from tests.deposits.scenario import claim, clock, correct, retract

pytestmark = pytest.mark.django_db

WORDS = ["threshold", "latency", "drift", "quokka"]
# Close ages too: a walk that stopped a little early would miss an older, better-ranked match.
AGES = [0.01, 0.3, 0.7, 1.0, 2.0, 6.0, 30.0, 200.0, 700.0]

# The ways PostgreSQL's recall can be planned for a small store; each must answer alike.
PATHS = recall_plans(rare_full_matches=3, rare_shares=({"threshold": 0.6, "latenc": 0.3}, 0.05))


def planned(name: str) -> AbstractContextManager[None]:
    return forced(PATHS[name])


class EveryOwnersMatches(SqliteBackend):
    """SQLite scoring every owner's full-text matches, then keeping the owner's."""

    match_sql = "deposits_fts MATCH %s"

    def match_params(self, query: str, user_id: str) -> list[object]:
        return [query]


deposit = st.tuples(
    st.integers(0, 4),  # bag
    st.sampled_from(POLARITIES),
    st.sampled_from(AGES),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),  # its words, repeats count
)
change = st.tuples(st.sampled_from(["correct", "retract"]), st.integers(0, 200), st.sampled_from(POLARITIES))
store = st.lists(
    st.tuples(st.lists(deposit, min_size=1, max_size=30), st.lists(change, max_size=4)),
    min_size=1,
    max_size=3,
)
queries = st.lists(
    st.tuples(st.lists(st.sampled_from([*WORDS, "the"]), min_size=1, max_size=3), st.integers(1, 12)),
    min_size=1,
    max_size=3,
)


def _write(owner: str, deposits: list, changes: list) -> None:
    now = timezone.now()
    by_age: dict[float, list[dict[str, Any]]] = {}
    for number, (bag, polarity, age, words) in enumerate(deposits):
        body = claim(polarity, f"{' '.join(words)} note {number}", {"model": "m", "version": f"v{bag}"})
        by_age.setdefault(age, []).append({**body, "idempotency_key": f"{owner}-{number}"})
    for age, items in sorted(by_age.items(), reverse=True):
        with clock(now - timedelta(days=age)):
            assert not deposit_add_many(bulk=validate_bulk(owner, items), channel=None).failed
    written = [
        str(pk)
        for pk in Deposit.objects.filter(user_id=owner)
        .order_by("created_at", "id")
        .values_list("pk", flat=True)
    ]
    for kind, pick, polarity in changes:
        target = written[pick % len(written)]
        if not Deposit.objects.filter(pk=target).live().exists():
            continue
        if kind == "retract":
            retract(target, user=owner)
        else:
            correct([target], f"{WORDS[pick % len(WORDS)]} corrected", polarity=polarity, user=owner)


def _same(request: SearchRequest, expected: tuple, candidates: list, aggregates: object, label: str) -> None:
    want_hits, want_aggregates = expected
    assert aggregates == want_aggregates, label
    assert [c.id for c in slice_hits(candidates, request.per_class)] == want_hits, label


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(owners=store, asked=queries)
def test_random_stores_recall_the_same_from_the_fast_path_as_from_scoring_every_match(owners, asked, db):
    run = uuid.uuid4().hex[:10]
    for number, (deposits, changes) in enumerate(owners):
        _write(f"prop-{run}-{number}", deposits, changes)
    assert_conflict_copies_match()
    for number in range(len(owners)):
        for words, limit in asked:
            request = SearchRequest(
                user_id=f"prop-{run}-{number}",
                words=query_words(" ".join(words)),
                now=timezone.now(),
                per_class=limit,
            )
            if connection.vendor == "postgresql":
                every, aggregates, _ = SearchBackend.search(PostgresBackend(), request)
                expected = ([c.id for c in slice_hits(every, limit)], aggregates)
                for name in PATHS:
                    with planned(name):
                        candidates, fast_aggregates, _ = PostgresBackend().search(request)
                    _same(request, expected, candidates, fast_aggregates, name)
            else:
                every, aggregates, _ = EveryOwnersMatches().search(request)
                expected = ([c.id for c in slice_hits(every, limit)], aggregates)
                candidates, fast_aggregates, _ = SqliteBackend().search(request)
                _same(request, expected, candidates, fast_aggregates, "owner's rowid range")

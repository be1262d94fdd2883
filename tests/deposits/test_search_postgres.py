"""PostgreSQL's fast recall paths give exactly what scoring every match gives."""

from __future__ import annotations

import random
from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone

from deposits.domain.recall import query_words, slice_hits
from deposits.search import SearchRequest
from deposits.search.base import SearchBackend
from deposits.search.postgres import PostgresBackend
from deposits.services import deposit_add_many, deposit_contradict, deposit_retract
from tests.deposits.scenario import claim, clock

pytestmark = pytest.mark.django_db
WORDS = ["threshold", "latency", "retry", "cache", "drift", "canary", "quokka", "harbor"]


@pytest.fixture
def store(on_postgres: None) -> None:
    """600 deposits of one owner over 60 bags and 200 days, some in conflict, some corrected."""
    rng = random.Random(4)
    now = timezone.now()
    for batch in range(6):
        items = []
        for i in range(100):
            bag = rng.randrange(60)
            polarity = rng.choice(["positive", "positive", "negative", "cautionary", "open"])
            text = " ".join(rng.choices(WORDS, weights=[30, 20, 10, 8, 6, 4, 1, 1], k=rng.randint(2, 5)))
            body = claim(
                polarity,
                f"{text} note {batch}-{i}",
                {"model": f"m{bag % 7}", "env": "prod", "version": f"v{bag}"},
            )
            items.append({**body, "idempotency_key": f"k-{batch}-{i}"})
        with clock(now - timedelta(days=rng.uniform(0, 200), minutes=batch)):
            deposit_add_many(user_id="owner", items=items, channel="agent-a")
    from deposits.models import Deposit

    rows = list(Deposit.objects.filter(user_id="owner").order_by("created_at", "id"))
    for row in rows[:15]:
        deposit_retract(user_id="owner", deposit_id=str(row.pk))
    for row in rows[20:30]:
        deposit_contradict(
            user_id="owner",
            data={
                **claim("positive", f"correction of {row.pk}"),
                "contradicts": [str(row.pk)],
                "reason": "re-measured",
            },
            channel="agent-a",
        )


def both_ways(query: str, limit: int, facets: dict | None = None) -> tuple:
    backend = PostgresBackend()
    request = SearchRequest(
        user_id="owner", words=query_words(query), now=timezone.now(), per_class=limit, facets=facets or {}
    )
    walked = SearchBackend.search(backend, request)
    fast_paths = []
    for dense in (0, 10**9):  # 0: every polarity walked newest first; huge: one top-N per polarity
        # Small chunks, so the walk pages several times and stops early on its bound.
        with (
            mock.patch("deposits.search.postgres.DENSE_BAGS", dense),
            mock.patch("deposits.search.postgres.NEWEST_FIRST_CHUNK", 8),
        ):
            fast_paths.append(backend.search(request))
    return walked, fast_paths


@pytest.mark.parametrize(
    "query", ["threshold", "latency", "quokka", "drift canary", "threshold latency retry"]
)
@pytest.mark.parametrize("limit", [1, 5, 10, 40])
def test_the_fast_paths_find_the_same_hits_and_flags_as_scoring_every_match(store, query, limit):
    (walked, aggregates, _), fast_paths = both_ways(query, limit)
    expected = [c.id for c in slice_hits(walked, limit)]
    assert expected, "the scenario should match something"
    for candidates, fast_aggregates, _ in fast_paths:
        assert fast_aggregates == aggregates
        assert [c.id for c in slice_hits(candidates, limit)] == expected


def test_the_fast_paths_honour_a_scope_filter(store):
    (walked, aggregates, _), fast_paths = both_ways("threshold", 10, {"model": "m3"})
    for candidates, fast_aggregates, _ in fast_paths:
        assert fast_aggregates == aggregates
        assert [c.id for c in slice_hits(candidates, 10)] == [c.id for c in slice_hits(walked, 10)]

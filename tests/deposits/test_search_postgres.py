"""PostgreSQL's fast recall paths give exactly what scoring every match gives."""

from __future__ import annotations

import random
from contextlib import AbstractContextManager
from datetime import timedelta
from itertools import combinations
from unittest import mock

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

import deposits.search.postgres as postgres
from deposits.domain.recall import query_words, slice_hits
from deposits.domain.types import POLARITIES
from deposits.domain.validation import validate_bulk, validate_correction
from deposits.search import SearchRequest
from deposits.search.base import SearchBackend
from deposits.search.postgres import PostgresBackend, or_lexemes, walk_plan
from deposits.services.deposits import deposit_add_many, deposit_contradict, deposit_retract
from tests.deposits.recall_plans import forced, recall_plans
from tests.deposits.scenario import claim, clock

pytestmark = pytest.mark.django_db
WORDS = ["threshold", "latency", "retry", "cache", "drift", "canary", "quokka", "harbor"]

# How the fast path can be made to answer a small store; each must give the same answer.
PATHS = recall_plans(rare_full_matches=40, rare_shares=({"threshold": 0.5, "latenc": 0.4}, 0.01))


def path(name: str) -> AbstractContextManager[None]:
    return forced(PATHS[name])


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
            deposit_add_many(bulk=validate_bulk("owner", items), channel="agent-a")
    from deposits.models import Deposit

    rows = list(Deposit.objects.filter(user_id="owner").order_by("created_at", "id"))
    for row in rows[:15]:
        deposit_retract(user_id="owner", deposit_id=str(row.pk))
    for row in rows[20:30]:
        deposit_contradict(
            correction=validate_correction(
                "owner",
                {
                    **claim("positive", f"correction of {row.pk}"),
                    "contradicts": [str(row.pk)],
                    "reason": "re-measured",
                },
            ),
            channel="agent-a",
        )


def request_for(query: str, limit: int, facets: dict | None = None) -> SearchRequest:
    return SearchRequest(
        user_id="owner", words=query_words(query), now=timezone.now(), per_class=limit, facets=facets or {}
    )


@pytest.mark.parametrize(
    "query", ["threshold", "latency", "quokka", "drift canary", "threshold latency retry", "the threshold"]
)
def test_every_fast_path_finds_the_same_hits_and_flags_as_scoring_every_match(store, query):
    for limit in (1, 5, 10, 40):
        request = request_for(query, limit)
        walked, aggregates, _ = SearchBackend.search(PostgresBackend(), request)
        expected = [c.id for c in slice_hits(walked, limit)]
        assert expected, "the scenario should match something"
        for name in PATHS:
            with path(name):
                candidates, fast_aggregates, _ = PostgresBackend().search(request)
            assert fast_aggregates == aggregates, (name, limit)
            assert [c.id for c in slice_hits(candidates, limit)] == expected, (name, limit)


def test_every_fast_path_honours_a_scope_filter(store):
    request = request_for("threshold latency", 10, {"model": "m3"})
    walked, aggregates, _ = SearchBackend.search(PostgresBackend(), request)
    for name in PATHS:
        with path(name):
            candidates, fast_aggregates, _ = PostgresBackend().search(request)
        assert fast_aggregates == aggregates, name
        assert [c.id for c in slice_hits(candidates, 10)] == [c.id for c in slice_hits(walked, 10)], name


def test_the_walk_stops_before_the_oldest_matches_when_newer_ones_fill_every_class(on_postgres):
    """The point of the walk: a common word's old matches are never read."""
    now = timezone.now()
    # One bag per polarity, so none is in conflict (a conflict bag's matches are read whole).
    old = [
        claim(p, "threshold threshold threshold", {"env": f"old-{p}"}) for p in ["positive", "negative"] * 30
    ]
    new = [
        claim(p, "threshold threshold threshold", {"env": f"new-{p}"}) for p in ["positive", "negative"] * 30
    ]
    for moment, bodies in ((now - timedelta(days=3000), old), (now - timedelta(hours=1), new)):
        items = [{**body, "idempotency_key": f"{moment}-{i}"} for i, body in enumerate(bodies)]
        with clock(moment):
            deposit_add_many(bulk=validate_bulk("owner", items), channel="agent-a")
    request = request_for("threshold", 10)
    with path("walk"), CaptureQueriesContext(connection) as queries:
        candidates, _, _ = PostgresBackend().search(request)
    assert {c.polarity for c in slice_hits(candidates, 10)} == {"positive", "negative"}
    walked = [q["sql"] for q in queries.captured_queries if "cb AS (" in q["sql"]]
    assert walked, "the walk read by window"
    assert all("d.created_at >=" in sql for sql in walked), "no window reached the 3,000-day-old matches"


def item(polarity: str, content: str, env: str, key: str) -> dict:
    return {**claim(polarity, content, {"env": env}), "idempotency_key": key}


def written(ago: timedelta, items: list[dict]) -> list:
    with clock(timezone.now() - ago):
        return deposit_add_many(bulk=validate_bulk("owner", items), channel="agent-a").committed


def both_ways(plan: str, query: str, limit: int) -> tuple[list[str], list[str]]:
    """The hits `plan` gives, and those scoring every match gives."""
    request = request_for(query, limit)
    every, _, _ = SearchBackend.search(PostgresBackend(), request)
    with path(plan):
        candidates, _, _ = PostgresBackend().search(request)
    return [c.id for c in slice_hits(candidates, limit)], [c.id for c in slice_hits(every, limit)]


WALKS = ["walk", "tight walk", "tiers"]


@pytest.mark.parametrize("plan", WALKS)
def test_an_older_match_holding_the_word_more_often_still_outranks_newer_ones(on_postgres, plan):
    """The walk stops only when no older match can win, and one holding the word more often can.

    Four "threshold"s written two days ago (rank 0.087 × decay 0.91) beat ten single ones written an
    hour ago (0.061 × 1.0).
    """
    (winner,) = written(
        timedelta(days=2), [item("positive", "threshold threshold threshold threshold", "old", "o")]
    )
    written(
        timedelta(hours=1), [item("positive", f"threshold note {i}", f"e{i}", f"n{i}") for i in range(10)]
    )
    fast, every = both_ways(plan, "threshold", 10)
    assert fast[0] == winner.id == every[0]


@pytest.mark.parametrize("plan", WALKS)
def test_an_older_match_in_a_conflict_bag_still_comes_before_newer_ones_outside(on_postgres, plan):
    """Conflict bags rank first whatever the score, so an older match in one keeps the walk open.

    Ten fresh "threshold"s in quiet bags do not close the walk while a bag in conflict may hold an
    older one (written 30 days ago).
    """
    disputed = [
        item("positive", "threshold holds", "disputed", "c1"),
        item("negative", "it does not", "disputed", "c2"),
    ]
    older, _ = written(timedelta(days=30), disputed)
    written(
        timedelta(hours=1),
        [item("positive", f"threshold note {i}", f"quiet-{i}", f"n{i}") for i in range(10)],
    )
    fast, every = both_ways(plan, "threshold", 10)
    assert fast[0] == older.id == every[0]
    assert fast == every


@pytest.mark.parametrize("plan", WALKS)
def test_a_conflict_bag_does_not_stop_the_walk_for_an_older_quiet_match_that_still_ranks(on_postgres, plan):
    """The walk reads every bag, not only those in conflict, while an older quiet match could rank.

    An older match from a quiet bag could still beat the polarity's last quiet member: four
    "threshold"s written two days ago beat single ones written an hour ago.
    """
    (winner,) = written(
        timedelta(days=2), [item("positive", "threshold threshold threshold threshold", "old", "o")]
    )
    disputed = [
        item("positive", "threshold holds", "disputed", "c1"),
        item("negative", "it does not", "disputed", "c2"),
    ]
    written(
        timedelta(hours=1),
        [*disputed, *(item("positive", f"threshold note {i}", f"quiet-{i}", f"n{i}") for i in range(3))],
    )
    fast, every = both_ways(plan, "threshold", 3)
    assert winner.id in every
    assert fast == every


@pytest.mark.parametrize("plan", ["score all", "deposits alone", *WALKS])
def test_a_polarity_takes_its_places_from_conflict_bags_first_and_a_short_one_the_rest_outside(
    on_postgres, plan
):
    """A polarity fills its places from its conflict bags first, then from quiet bags, newest first.

    Every match of a bag in conflict comes before any other: a polarity whose conflict bags hold its
    places is answered from them, read alone; one whose conflict bags hold fewer takes the rest from
    the quiet bags. Limit 10: 3 positive, 3 negative, 2 cautionary, 2 open; the conflict bag, a
    month old, holds 2 positive, 1 negative, 2 cautionary and 2 open.
    """
    split = [("positive", 2), ("negative", 1), ("cautionary", 2), ("open", 2)]
    disputed = written(
        timedelta(days=30),
        [
            item(polarity, f"threshold disputed {polarity} {n}", "split", f"c-{polarity}-{n}")
            for polarity, count in split
            for n in range(count)
        ],
    )
    quiet: dict[str, list[str]] = {}
    for hours in range(1, 5):  # newer, so each outscores the conflict bag's of its polarity
        for polarity in POLARITIES:
            (row,) = written(
                timedelta(hours=hours),
                [item(polarity, f"threshold {polarity}", f"quiet-{polarity}", f"q{polarity}{hours}")],
            )
            quiet.setdefault(polarity, []).append(row.id)
    fast, every = both_ways(plan, "threshold", 10)
    assert fast == every
    assert set(fast[:7]) == {row.id for row in disputed}
    # The two negatives the conflict bag lacks, newest first, then the positive it lacks (a
    # 14-day half-life decays an hour more than a 90-day one).
    assert fast[7:] == [quiet["negative"][0], quiet["negative"][1], quiet["positive"][0]]


def test_a_query_whose_rank_has_no_bound_is_scored_in_full(store):
    """A tsquery that is not a plain OR of lexemes (a word the parser splits) is never walked."""
    request = request_for("threshold latency", 10)
    walked, aggregates, _ = SearchBackend.search(PostgresBackend(), request)
    with path("walk"), mock.patch.object(postgres, "or_lexemes", return_value=None):
        candidates, fast_aggregates, _ = PostgresBackend().search(request)
    assert fast_aggregates == aggregates
    assert [c.id for c in slice_hits(candidates, 10)] == [c.id for c in slice_hits(walked, 10)]


@pytest.mark.parametrize(
    ("tsquery", "lexemes"),
    [
        ("'threshold' | 'latenc'", ["threshold", "latenc"]),
        ("'score' | 'score'", ["score"]),
        ("'quokka'", ["quokka"]),
        ("", []),
        ("'o''brien'", ["o'brien"]),
        ("'co' <-> '2'", None),
        ("'a' & 'b'", None),
        ("!'a'", None),
    ],
)
def test_only_a_plain_or_of_lexemes_has_a_rank_bound(tsquery, lexemes):
    assert or_lexemes(tsquery) == lexemes


def test_a_walked_match_of_a_tiered_plan_can_hold_only_one_of_the_words():
    shares = ({"memori": 0.1, "error": 0.09, "rate": 0.08}, 0.001)
    plan = walk_plan(["memori", "error", "rate"], 100_000, shares)
    assert plan.full == "('memori' & ('error' | 'rate') | ('error' & 'rate'))"
    assert plan.walk == "'memori' | 'error' | 'rate'"
    assert plan.bound == pytest.approx(0.1 / 3)
    # With few deposits repeating any of the words, those are scored in full too, and the bound
    # is what ts_rank gives a deposit holding one of the three once.
    plan = walk_plan(["memori", "error", "rate"], 100_000, shares, ({"memori": 0.5}, 0.001))
    assert (plan.repeats, plan.bound) == ("'error' | 'rate'", pytest.approx(0.1 / 3))
    plan = walk_plan(["memori", "error", "rate"], 100_000, shares, ({}, 0.001))
    assert plan.repeats == "'memori' | 'error' | 'rate'"
    assert plan.bound == pytest.approx(0.1 / 1.64493406685 / 3)


@pytest.mark.parametrize("words", [3, 4, 6])
def test_a_tier_matches_exactly_the_deposits_holding_that_many_of_its_words(on_postgres, words):
    """Every set of the words, against "at least t of them" for each t, as PostgreSQL matches it."""
    lexemes = ["memori", "error", "rate", "spike", "outag", "incid"][:words]
    held = [list(subset) for size in range(words + 1) for subset in combinations(lexemes, size)]
    with connection.cursor() as cursor:
        for count in range(1, words + 1):
            cursor.execute(
                "SELECT array_to_tsvector(h.lexemes) @@ %s::tsquery FROM unnest(%s::text[]) WITH ORDINALITY AS "
                "u(joined, n) CROSS JOIN LATERAL (SELECT string_to_array(u.joined, ' ') AS lexemes) h ORDER BY u.n",
                [postgres._at_least_of(count, lexemes), [" ".join(subset) for subset in held]],
            )
            matched = [row[0] for row in cursor.fetchall()]
            assert matched == [len(subset) >= count for subset in held], count


def test_few_expected_matches_are_scored_in_full_without_a_walk():
    plan = walk_plan(["quokka", "pulsar"], 100_000, ({"quokka": 0.007, "pulsar": 0.008}, 0.001))
    assert (plan.full, plan.walk) == ("'quokka' | 'pulsar'", None)


def test_a_deposit_two_parts_find_takes_one_place_in_its_class(on_postgres):
    """A deposit the walk's first statement finds twice takes one place in its class, not two.

    A deposit holding both words and repeating one is found twice there (the tier, the repeaters);
    counted twice, the first two would fill a top four.
    """
    now = timezone.now()
    rich = [
        claim("positive", " ".join(["drift"] * times + ["canary"]), {"env": f"rich-{times}"})
        for times in (4, 3, 2)
    ]
    plain = [claim("positive", f"drift note {i}", {"env": f"plain-{i}"}) for i in range(12)]
    for moment, bodies in ((now - timedelta(days=1), rich), (now - timedelta(hours=1), plain)):
        items = [{**body, "idempotency_key": f"{moment}-{i}"} for i, body in enumerate(bodies)]
        with clock(moment):
            deposit_add_many(bulk=validate_bulk("owner", items), channel="agent-a")
    for limit in range(1, 6):
        request = request_for("drift canary", limit)
        walked, _, _ = SearchBackend.search(PostgresBackend(), request)
        with path("tiers"):
            candidates, _, _ = PostgresBackend().search(request)
        assert [c.id for c in slice_hits(candidates, limit)] == [c.id for c in slice_hits(walked, limit)], (
            limit
        )


def test_every_gin_index_recall_reads_keeps_a_small_pending_list(on_postgres: None) -> None:
    """Every GIN index recall reads keeps its pending list small (deposits/0012).

    A search reads a GIN index's whole pending list: at the 4 MB default, a store taking writes made
    recall pay for up to three such lists.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.relname, i.reloptions FROM pg_index x "
            "JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid "
            "JOIN pg_am am ON am.oid = i.relam "
            "WHERE am.amname = 'gin' AND t.relname IN ('deposits_deposit', 'deposits_scopebag', 'deposits_conflictcopy', "
            "'deposits_bagterms')"
        )
        indexes = dict(cursor.fetchall())
    assert set(indexes) >= {
        "deposit_user_search",
        "deposit_user_repeated",
        "bag_user_terms",
        "conflict_copy_user_search",
        "bag_terms_bag_search",
    }
    assert {
        name: options for name, options in indexes.items() if options != ["gin_pending_list_limit=256"]
    } == {}

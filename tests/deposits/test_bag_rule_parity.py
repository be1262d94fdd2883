"""One definition of each bag rule: Python, the ORM and every backend's SQL agree on random bags.

The same flags on every polarity mix, supersessions, retractions, and retractions of corrections,
which revive what they corrected.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deposits.domain import bags as rules
from deposits.domain.bags import BagStats
from deposits.domain.types import DIRECTIONAL, POLARITIES
from deposits.models import ConflictEpisode, Contradiction, Deposit, OwnerTally, ScopeBag
from deposits.search.base import SearchBackend, SearchRequest
from deposits.search.postgres import PostgresBackend
from deposits.search.sqlite import SqliteBackend
from deposits.selectors.hits import _in_one_statement, _through_the_orm
from deposits.selectors.recall import recall
from deposits.services.deposits import deposit_retract
from deposits.sql.rules import confident_sql, dominant_sql, holds_live_sql, in_conflict_sql, live_sql
from tests.deposits.recount import assert_conflict_copies_match, assert_tallies_match_a_recount
from tests.deposits.scenario import correct, put, retract

pytestmark = pytest.mark.django_db(transaction=False)

SCOPES = [{"model": "gpt-5", "dataset": "evals", "env": env} for env in ("a", "b", "c")]
WORD = "marker"

# An operation: add(polarity, scope), correct(earlier deposit, polarity), retract(earlier
# deposit) or erase(earlier deposit).
operations = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.sampled_from(POLARITIES), st.integers(0, len(SCOPES) - 1)),
        st.tuples(st.just("correct"), st.sampled_from(POLARITIES), st.integers(0, 50)),
        st.tuples(st.just("retract"), st.just(""), st.integers(0, 50)),
        st.tuples(st.just("erase"), st.just(""), st.integers(0, 50)),
    ),
    min_size=1,
    max_size=14,
)


def _write(user: str, ops: list[tuple[str, str, int]]) -> None:
    written: list[str] = []
    for kind, polarity, pick in ops:
        if kind == "add":
            written.append(put(polarity, f"{WORD} claim {len(written)}", SCOPES[pick], user=user))
        elif written and kind == "correct":
            target = written[pick % len(written)]
            if not Deposit.objects.filter(pk=target, retracted_at__isnull=True).exists():
                continue
            written.append(correct([target], f"{WORD} correction", polarity=polarity, user=user))
        elif written and kind == "retract":
            retract(written[pick % len(written)], user=user)
        elif written and kind == "erase":
            target = written.pop(pick % len(written))
            deposit_retract(user_id=user, deposit_id=target, mode="hard")


def _python_flags(user: str) -> dict[str, dict[str, bool]]:
    """The domain rules applied to the deposits themselves, recounted in Python."""
    # domain.md, Live: superseded = the target of an edge whose source is not soft-retracted
    # (read from the deposits themselves, not from the edge's flag the services keep).
    superseded = set(
        Contradiction.objects.filter(user_id=user, new_deposit__retracted_at__isnull=True).values_list(
            "old_deposit_id", flat=True
        )
    )
    live: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(POLARITIES, 0))
    kept: dict[str, set[str]] = defaultdict(set)
    kept_superseded: dict[str, int] = defaultdict(int)
    for bag in ScopeBag.objects.filter(user_id=user).values_list("id", flat=True):
        live[bag]  # every bag row has an entry (one whose every deposit was erased went with them)
    for bag, pk, polarity, retracted_at in Deposit.objects.filter(user_id=user).values_list(
        "bag_id", "pk", "polarity", "retracted_at"
    ):
        live[bag]  # every bag with a deposit has an entry
        if retracted_at is not None:
            continue
        if rules.is_directional(polarity):
            kept[bag].add(polarity)
        if rules.is_live(retracted=False, superseded=pk in superseded):
            live[bag][polarity] += 1
        else:
            kept_superseded[bag] += 1
    flags = {}
    for bag, counts in live.items():
        kinds = sum(counts[p] > 0 for p in DIRECTIONAL)
        directional = sum(counts[p] for p in DIRECTIONAL)
        flags[bag] = {
            "live": sum(counts.values()) > 0,
            "conflict": rules.in_conflict(kinds),
            "thin": rules.is_thin(directional),
            "confident": rules.is_confident(kinds, directional),
            "resolved": rules.is_resolved(len(kept[bag]), kept_superseded[bag], kinds),
        }
    return flags


def _orm_flags(user: str) -> dict[str, dict[str, bool]]:
    bags = ScopeBag.objects.filter(user_id=user)
    ids = lambda qs: set(qs.values_list("id", flat=True))  # noqa: E731
    live, conflict = ids(bags.holding_live()), ids(bags.in_conflict())
    confident, resolved = ids(bags.confident()), ids(bags.resolved())
    return {
        bag.id: {
            "live": bag.id in live,
            "conflict": bag.id in conflict,
            "thin": rules.is_thin(bag.directional),
            "confident": bag.id in confident,
            "resolved": bag.id in resolved,
        }
        for bag in bags
    }


def _sql_flags(user: str) -> dict[str, dict[str, bool]]:
    """The raw fragments the search backends and bag counts use, asked of the same rows."""
    sql = (
        f"SELECT bag.id, {holds_live_sql('bag')}, {in_conflict_sql('bag')}, {confident_sql('bag')} "
        "FROM deposits_scopebag bag WHERE bag.user_id = %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [user])
        rows = cursor.fetchall()
        cursor.execute(
            f"SELECT d.id FROM deposits_deposit d WHERE d.user_id = %s AND {live_sql('d')}", [user]
        )
        live_ids = {str(uuid.UUID(str(row[0]))) for row in cursor.fetchall()}
        cursor.execute(
            f"SELECT d.id FROM deposits_deposit d WHERE d.user_id = %s AND {live_sql('d', owner_param=True)}",
            [user, user],
        )
        live_ids_by_owner = {str(uuid.UUID(str(row[0]))) for row in cursor.fetchall()}
    assert (
        live_ids
        == live_ids_by_owner
        == {str(pk) for pk in Deposit.objects.filter(user_id=user).live().values_list("pk", flat=True)}
    )
    return {bag: {"live": bool(a), "conflict": bool(b), "confident": bool(c)} for bag, a, b, c in rows}


def _backends() -> list[tuple[str, SearchBackend, bool]]:
    """(name, backend, use the generic walk over every match)."""
    if connection.vendor == "postgresql":
        return [
            ("postgres bag lexemes", PostgresBackend(), False),
            ("postgres match walk", PostgresBackend(), True),
        ]
    return [("sqlite fts5", SqliteBackend(), True)]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations)
def test_the_python_rule_the_orm_and_every_backends_sql_agree(ops, db):
    user = f"parity-{uuid.uuid4().hex[:12]}"
    _write(user, ops)
    python, orm, sql = _python_flags(user), _orm_flags(user), _sql_flags(user)
    assert orm == python
    assert sql == {bag: {k: v for k, v in flags.items() if k in sql[bag]} for bag, flags in python.items()}
    # Every deposit holds WORD, so a recall matches exactly the bags holding a live deposit.
    matching = [bag for bag, flags in python.items() if flags["live"]]
    expected = (
        len(matching),
        sum(python[bag]["conflict"] for bag in matching),
        sum(python[bag]["confident"] for bag in matching),
    )
    request = SearchRequest(user_id=user, words=[WORD], now=timezone.now(), per_class=50)
    for name, backend, walk in _backends():
        _, totals, _ = SearchBackend.search(backend, request) if walk else backend.search(request)
        assert (totals.bag_count, totals.conflict_bag_count, totals.confident_bag_count) == expected, name
    for hit in recall(user_id=user, query=WORD, limit=50):
        assert hit.has_disagreement == python[hit.bag_id]["conflict"]
        assert hit.is_confident == python[hit.bag_id]["confident"]
        assert hit.is_thin_evidence == python[hit.bag_id]["thin"]
    # Conflict episodes follow: one open episode for each bag in conflict, none for any other
    # (so the queue and the desk list exactly the bags in conflict, revived ones included).
    open_episodes = list(
        ConflictEpisode.objects.filter(user_id=user, ended_at__isnull=True).values_list("bag_id", flat=True)
    )
    assert sorted(open_episodes) == sorted(bag for bag, flags in python.items() if flags["conflict"])
    # The owner's tally, kept by each write, says what counting everything says.
    tally = OwnerTally.objects.filter(user_id=user).first()
    if tally is None:  # nothing was written
        assert not ScopeBag.objects.filter(user_id=user).exists()
        return
    assert tally.live_deposits == Deposit.objects.filter(user_id=user).live().count()
    assert tally.open_conflicts == sum(flags["conflict"] for flags in python.values())
    # A bag is kept exactly while a deposit is in it: erasing its last took its row.
    bags = ScopeBag.objects.filter(user_id=user)
    assert set(bags.values_list("id", flat=True)) == set(
        Deposit.objects.filter(user_id=user).values_list("bag_id", flat=True)
    )
    # The last write is the newest bag's, or an erasure that took the only row dated at it.
    assert not bags.exists() or tally.last_activity >= bags.latest("updated_at").updated_at
    assert_tallies_match_a_recount()  # and the deployment's count of owners holding live deposits
    assert_conflict_copies_match()  # and the copies recall reads its conflict bags' matches from


# Few distinct times, so that ties between polarities (and missing times) come up often.
_MOMENTS = [None, *(timezone.now() - timedelta(days=days) for days in (3, 2, 1))]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(counts=st.tuples(*[st.integers(0, 3)] * 3), newest=st.tuples(*[st.sampled_from(_MOMENTS)] * 3))
def test_the_dominant_polarity_in_sql_is_the_python_rules(counts, newest, db):
    row = {}
    for polarity, count, moment in zip(DIRECTIONAL, counts, newest, strict=True):
        row[f"live_{polarity}"], row[f"newest_{polarity}_at"] = count, moment
    # Typed, as the columns are: PostgreSQL cannot type a bare parameter in a UNION.
    moment = "timestamptz" if connection.vendor == "postgresql" else "text"
    columns = ", ".join(
        f"CAST(%s AS {moment if name.startswith('newest') else 'integer'}) AS {name}" for name in row
    )
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {dominant_sql('bag')} FROM (SELECT {columns}) bag", list(row.values()))
        (in_sql,) = cursor.fetchone()
    stats = BagStats(*counts, open=0, newest=newest)
    assert in_sql == stats.dominant_polarity


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the one-statement read is PostgreSQL's")
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations)
def test_a_hits_record_stats_and_peers_are_the_same_from_one_statement_and_from_the_orm(ops, db):
    user = f"details-{uuid.uuid4().hex[:12]}"
    _write(user, ops)
    ids = [str(pk) for pk in Deposit.objects.filter(user_id=user).values_list("pk", flat=True)]

    # Retracted and superseded deposits too: recall shows those with include_superseded.
    def shown(details: dict) -> dict:
        # What recall shows of each hit; the one statement also brings the belief's state.
        return {hit: (detail.record, detail.stats, detail.conflict_peers) for hit, detail in details.items()}

    assert shown(_in_one_statement(user, ids)) == shown(_through_the_orm(user, ids))

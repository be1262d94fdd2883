"""A from-scratch recount of scope bags, to compare with the live counts every write keeps."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db import connection
from django.db.models import Max

from deposits.models import (
    ConflictCopy,
    ConflictEpisode,
    Contradiction,
    DeploymentTally,
    Deposit,
    OwnerTally,
    ScopeBag,
)
from deposits.sql.conflict_copies import TABLE as COPIES

DIRECTIONAL = ("positive", "negative", "cautionary")
COLUMNS = (
    *(f"live_{p}" for p in (*DIRECTIONAL, "open")),
    *(f"kept_{p}" for p in DIRECTIONAL),
    "kept_superseded",
)
NEWEST = tuple(f"newest_{p}_at" for p in DIRECTIONAL)


def recounted_bags() -> dict[str, dict[str, Any]]:
    """Every bag's counts and newest live times, computed from Deposit and Contradiction rows alone."""
    # domain.md, Live: an edge supersedes while its source (the correction) is not soft-retracted.
    superseded = set(
        Contradiction.objects.filter(new_deposit__retracted_at__isnull=True).values_list(
            "old_deposit_id", flat=True
        )
    )
    counts: dict[str, dict[str, Any]] = defaultdict(
        lambda: {**dict.fromkeys(COLUMNS, 0), **dict.fromkeys(NEWEST)}
    )
    rows = Deposit.objects.values_list("bag_id", "pk", "polarity", "retracted_at", "created_at")
    for bag, pk, polarity, retracted_at, created_at in rows:
        row = counts[bag]
        if retracted_at is not None:
            continue
        if pk in superseded:
            row["kept_superseded"] += 1
        else:
            row[f"live_{polarity}"] += 1
            newest = f"newest_{polarity}_at"
            if polarity in DIRECTIONAL and (row[newest] is None or created_at > row[newest]):
                row[newest] = created_at
        if polarity in DIRECTIONAL:
            row[f"kept_{polarity}"] += 1
    return dict(counts)


def stored_bags() -> dict[str, dict[str, Any]]:
    """Every bag row's kept counts and newest live times."""
    return {row.pop("id"): row for row in ScopeBag.objects.values("id", *COLUMNS, *NEWEST)}


def assert_bags_match_a_recount() -> None:
    """The live counts equal a recount; a bag row emptied by retraction or erasure counts zero."""
    recounted = recounted_bags()
    empty = {**dict.fromkeys(COLUMNS, 0), **dict.fromkeys(NEWEST)}
    stored = stored_bags()
    assert set(recounted) <= set(stored)
    assert stored == {bag: recounted.get(bag, empty) for bag in stored}
    assert_tallies_match_a_recount()
    assert_conflict_copies_match()


def assert_conflict_copies_match() -> None:
    """PostgreSQL holds a copy of exactly the deposits whose bag is in conflict, by the recount.

    Each with its deposit's columns, retraction marker and text vector
    (deposits.sql.conflict_copies).
    """
    if connection.vendor != "postgresql":
        assert not ConflictCopy.objects.exists()
        return
    in_conflict = {
        bag for bag, row in recounted_bags().items() if sum(row[f"live_{p}"] > 0 for p in DIRECTIONAL) >= 2
    }
    fields = ("user_id", "bag_id", "polarity", "created_at", "retracted_at")
    expected = {
        row.pop("id"): row for row in Deposit.objects.filter(bag_id__in=in_conflict).values("id", *fields)
    }
    assert {row.pop("id"): row for row in ConflictCopy.objects.values("id", *fields)} == expected
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) FROM {COPIES} c JOIN deposits_deposit d ON d.id = c.id "
            "WHERE c.search_vector IS DISTINCT FROM d.search_vector"
        )
        assert cursor.fetchone() == (0,)


def assert_tallies_match_a_recount() -> None:
    """Each owner's tally (live deposits, open conflicts, last write) equals a count of its rows."""
    live: dict[str, int] = defaultdict(int)
    for user_id, *counts in ScopeBag.objects.values_list(
        "user_id", *(f"live_{p}" for p in (*DIRECTIONAL, "open"))
    ):
        live[user_id] += sum(counts)
    conflicts: dict[str, int] = defaultdict(int)
    for user_id in ConflictEpisode.objects.filter(ended_at__isnull=True).values_list("user_id", flat=True):
        conflicts[user_id] += 1
    activity = {
        row["user_id"]: row["last"]
        for row in ScopeBag.objects.values("user_id").annotate(last=Max("updated_at"))
    }
    tallies = {
        user_id: (deposits, open_conflicts, last)
        for user_id, deposits, open_conflicts, last in OwnerTally.objects.values_list(
            "user_id", "live_deposits", "open_conflicts", "last_activity"
        )
    }
    # An erasure that emptied a bag took its row, and with it the only row dated at the erasure:
    # the tally's last write may be later than every bag's, and an owner left with no bag keeps
    # a tally of nothing.
    late = {
        user_id
        for user_id, (_, _, last) in tallies.items()
        if user_id not in activity or last > activity[user_id]
    }
    expected = {
        user_id: (
            live[user_id],
            conflicts[user_id],
            tallies[user_id][2] if user_id in late else activity[user_id],
        )
        for user_id in {*activity, *late}
    }
    assert tallies == expected, (tallies, expected)
    deployment = DeploymentTally.objects.filter(id=1).values_list("owners", "open_conflicts").first() or (
        0,
        0,
    )
    assert deployment == (
        sum(deposits > 0 for deposits, _, _ in tallies.values()),
        ConflictEpisode.objects.filter(ended_at__isnull=True).count(),
    )

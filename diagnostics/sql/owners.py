"""The owners list as SQL: one statement a page, its total riding along, on either database.

Sorted by a column of the owners' tallies (kept by the writes), a page is an index walk of the
tallies and only its owners' uncertain beliefs and latest snapshots are read: its cost follows
the page, not the deployment. Sorted by FMI or uncertain beliefs, every owner's are joined first
(by hash, one pass). The total is a count of the tallies.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection

from beliefs.models import Belief
from deposits.models import DeploymentTally, OwnerTally
from diagnostics.models import Snapshot

TALLIES = OwnerTally._meta.db_table
DEPLOYMENT = DeploymentTally._meta.db_table
BELIEFS = Belief._meta.db_table
SNAPSHOTS = Snapshot._meta.db_table
# The columns of the owners' tallies a page can be sorted by, each indexed.
TALLY_SORTS = ("user_id", "live_deposits", "open_conflicts", "last_activity")


def _row_columns() -> str:
    """An owners-list row's columns over the tallies `o`.

    The live counts the writes keep, the uncertain beliefs counted, the FMI and time of the
    latest snapshot (by index, one each: joined by hash, every owner's latest snapshot was read,
    9.5 ms of 26.6 at 50,000 owners).
    """
    latest = f"FROM {SNAPSHOTS} s WHERE s.user_id = o.user_id AND s.is_latest"
    uncertain = f"(SELECT COUNT(*) FROM {BELIEFS} b WHERE b.user_id = o.user_id AND b.is_uncertain)"
    return (
        f"o.user_id, o.live_deposits, o.open_conflicts, {uncertain} AS uncertain_beliefs, o.last_activity, "
        f"(SELECT s.fmi {latest}), (SELECT s.taken_at {latest})"
    )


def owner_row(user_id: str) -> Sequence[Any] | None:
    """One owner's row of the list, or None before its first write.

    The row is user id, live deposits, open conflicts, uncertain beliefs, last activity, FMI and
    snapshot time.
    """
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {_row_columns()} FROM {TALLIES} o WHERE o.user_id = %s", [user_id])
        return cursor.fetchone()


def owner_rows(*, prefix: str, column: str, descending: bool, limit: int, offset: int) -> list[Sequence[Any]]:
    """A page of the owners holding live deposits, sorted by `column`.

    Each row as `owner_row`'s columns and then the total (of the deployment, or of the owners
    whose id starts with `prefix`).
    """
    direction = "DESC" if descending else "ASC"
    # A prefix compared exactly (LIKE would read _ as a wildcard, and SQLite's ignores case).
    narrow = "AND substr(o.user_id, 1, %s) = %s" if prefix else ""
    narrowing = [len(prefix), prefix] if prefix else []
    # The total rides along, read once (it refers to no row of the page): the deployment's count
    # of owners holding live deposits, or with a prefix the matching tallies counted.
    total = (
        f"(SELECT COUNT(*) FROM {TALLIES} t WHERE t.live_deposits > 0 {narrow.replace('o.', 't.')})"
        if prefix
        else f"(SELECT d.owners FROM {DEPLOYMENT} d WHERE d.id = 1)"
    )
    if column in TALLY_SORTS:
        sql = _by_tally_sql(column, direction, narrow, total)
    else:
        sql = _joined_sql(column, direction, narrow, total)
    with connection.cursor() as cursor:
        cursor.execute(sql, [*narrowing, *narrowing, limit, offset])
        return cursor.fetchall()


def _by_tally_sql(column: str, direction: str, narrow: str, total: str) -> str:
    """The page walked from the tallies' index, then its rows' beliefs and snapshots read."""
    return f"""
        SELECT {_row_columns()}, {total} AS total
        FROM (
            SELECT user_id, live_deposits, open_conflicts, last_activity FROM {TALLIES} o
            WHERE o.live_deposits > 0 {narrow}
            ORDER BY o.{column} {direction}, o.user_id
            LIMIT %s OFFSET %s
        ) o
        ORDER BY o.{column} {direction}, o.user_id
    """


def _joined_sql(column: str, direction: str, narrow: str, total: str) -> str:
    """Every owner's uncertain beliefs and latest snapshot joined, then sorted by one of them."""
    # No FMI sorts last both ways; no uncertain belief is a zero, and sorts as one.
    nulls = "NULLS LAST" if column == "fmi" else ""
    return f"""
        SELECT o.user_id, o.live_deposits, o.open_conflicts, COALESCE(u.n, 0) AS uncertain_beliefs,
               o.last_activity, s.fmi, s.taken_at, {total} AS total
        FROM {TALLIES} o
        LEFT JOIN (
            SELECT user_id, COUNT(*) AS n FROM {BELIEFS} WHERE is_uncertain GROUP BY user_id
        ) u ON u.user_id = o.user_id
        LEFT JOIN {SNAPSHOTS} s ON s.user_id = o.user_id AND s.is_latest
        WHERE o.live_deposits > 0 {narrow}
        ORDER BY {column} {direction} {nulls}, o.user_id
        LIMIT %s OFFSET %s
    """

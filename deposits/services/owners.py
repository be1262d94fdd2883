"""Each owner's tally (live deposits, open conflicts, last write), kept by the writes.

A write adds up what it changed (`Tally`) while it writes and applies it with `tally_write` as
its last statement, after every bag row it locks: two writers of one owner then meet on the
owner's row only at the end, never in a cycle with a bag. The owners list reads these rows, so
its cost follows the page, not the number of bags in the deployment.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import connection

from deposits.models import ConflictEpisode, DeploymentTally, OwnerTally, ScopeBag
from deposits.sql.rules import directional_sql

TALLY = OwnerTally._meta.db_table
DEPLOYMENT = DeploymentTally._meta.db_table


@dataclass
class Tally:
    """What one write changed for its owner."""

    user_id: str
    live: int = 0
    conflicts: int = 0
    activity: datetime | None = None

    def touched(self, at: datetime, *, live: int = 0, conflicts: int = 0) -> None:
        self.live += live
        self.conflicts += conflicts
        if self.activity is None or at > self.activity:
            self.activity = at

    def absorb(self, other: Tally) -> None:
        if other.activity is not None:
            self.touched(other.activity, live=other.live, conflicts=other.conflicts)


_APPLY = f"""
INSERT INTO {TALLY} (user_id, live_deposits, open_conflicts, last_activity) VALUES (%s, %s, %s, %s)
ON CONFLICT (user_id) DO UPDATE SET
    live_deposits = {TALLY}.live_deposits + excluded.live_deposits,
    open_conflicts = {TALLY}.open_conflicts + excluded.open_conflicts,
    last_activity = CASE WHEN excluded.last_activity > {TALLY}.last_activity
                         THEN excluded.last_activity ELSE {TALLY}.last_activity END
RETURNING live_deposits
"""
# Written only when an owner gains its first live deposit or loses its last, or a conflict
# opens or ends.
_DEPLOYMENT = f"""
INSERT INTO {DEPLOYMENT} (id, owners, open_conflicts) VALUES (1, %s, %s)
ON CONFLICT (id) DO UPDATE SET owners = {DEPLOYMENT}.owners + excluded.owners,
                               open_conflicts = {DEPLOYMENT}.open_conflicts + excluded.open_conflicts
"""


def tally_write(tally: Tally) -> None:
    """Apply a write's changes to its owner's tally row, and to the deployment's counts when they move.

    The owner's row is created at its first write. The deployment's counts change when the owner
    starts or stops holding live deposits or a conflict opens or ends; the deployment's row is the
    last one the write locks.
    """
    if tally.activity is None:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            _APPLY,
            [
                tally.user_id,
                tally.live,
                tally.conflicts,
                connection.ops.adapt_datetimefield_value(tally.activity),
            ],
        )
        (live,) = cursor.fetchone()
        owners = 0 if (live > 0) == (live - tally.live > 0) else 1 if live > 0 else -1
        if owners or tally.conflicts:
            cursor.execute(_DEPLOYMENT, [owners, tally.conflicts])


def owner_tallies_rebuild(*, user_prefix: str = "") -> int:
    """Count the tallies and the deployment's counts afresh; returns the owners counted.

    From the bags and the open episodes, for what wrote beside the services: the migration that made
    them, and the bench loader.
    """
    mine = "substr(user_id, 1, %s) = %s"
    narrowing = [len(user_prefix), user_prefix]
    bags, episodes = ScopeBag._meta.db_table, ConflictEpisode._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {TALLY} WHERE {mine}", narrowing)
        cursor.execute(
            f"""
INSERT INTO {TALLY} (user_id, live_deposits, open_conflicts, last_activity)
SELECT b.user_id, b.live, coalesce(e.n, 0), b.activity
FROM (
    SELECT user_id, SUM({directional_sql("bag")} + bag.live_open) AS live, MAX(bag.updated_at) AS activity
    FROM {bags} bag WHERE {mine}
    GROUP BY bag.user_id
) b
LEFT JOIN (
    SELECT user_id, COUNT(*) AS n FROM {episodes}
    WHERE ended_at IS NULL AND {mine}
    GROUP BY user_id
) e ON e.user_id = b.user_id
""",
            narrowing * 2,
        )
        counted = cursor.rowcount
        cursor.execute(
            f"INSERT INTO {DEPLOYMENT} (id, owners, open_conflicts) "
            f"SELECT 1, (SELECT COUNT(*) FROM {TALLY} WHERE live_deposits > 0), "
            f"(SELECT COUNT(*) FROM {episodes} WHERE ended_at IS NULL) "
            "ON CONFLICT (id) DO UPDATE SET owners = excluded.owners, open_conflicts = excluded.open_conflicts"
        )
    return counted

"""Conflict episodes: opened and closed inside the transaction of the write that causes them.

A bag is in conflict by the rule of deposits.domain.bags; an episode opens when a write puts
it there and closes (with the cause and the deposit) when a write takes it out. The backlog
and time to resolution are read from these rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from datetime import datetime

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Exists, OuterRef

from deposits.domain.types import DIRECTIONAL
from deposits.models import ConflictEpisode, ScopeBag
from deposits.sql.rules import in_conflict_sql, live_sql

# (cause, deposit id) of the write that may have ended a bag's conflict.
Closer = tuple[str, uuid.UUID | str | None]


def episodes_sync(
    *,
    user_id: str,
    bag_ids: Iterable[str],
    now: datetime,
    closers: Mapping[str, Closer] | None = None,
    in_conflict: set[str] | None = None,
    taken_back: uuid.UUID | None = None,
) -> int:
    """Open an episode for each bag in conflict without one, and close those no longer in conflict.

    Returns how many more are open (opened less closed), for the owner's tally.

    `taken_back`: the deposit a retraction or erasure takes away. A bag whose last episode it
    had ended is back in the conflict it settled: the new episode, dated now, carries that wait
    on (`waiting_since`), so an undone resolution does not read as a conflict just begun.

    Runs after the bag counts of the write are updated, in its transaction; the bag rows are
    locked by then, so two writers never open two episodes for one bag. `in_conflict`: which
    of `bag_ids` are in conflict, given only by a write that added live deposits and took none
    away (no supersession, no retraction), having read it from the rows it wrote.
    """
    ids = set(bag_ids)
    if in_conflict is not None:
        # Adding live deposits only adds polarities to a bag: no conflict can end, so only the
        # bags in conflict now can need an episode (a write to quiet bags asks nothing).
        ids &= in_conflict
    if not ids:
        return 0
    if in_conflict is None:
        in_conflict = set(ScopeBag.objects.filter(id__in=ids).in_conflict().values_list("id", flat=True))
    open_now = set(
        ConflictEpisode.objects.filter(bag_id__in=ids, ended_at__isnull=True).values_list("bag_id", flat=True)
    )
    opening = sorted(in_conflict - open_now)
    if opening:
        waited = _waits_taken_back(opening, taken_back)
        ConflictEpisode.objects.bulk_create(
            ConflictEpisode(user_id=user_id, bag_id=bag_id, started_at=now, waiting_since=waited.get(bag_id))
            for bag_id in opening
        )
    closing = sorted(open_now - in_conflict)
    for bag_id in closing:
        cause, deposit_id = (closers or {}).get(bag_id, (ConflictEpisode.SUPERSESSION, None))
        ConflictEpisode.objects.filter(bag_id=bag_id, ended_at__isnull=True).update(
            ended_at=now, ended_by=cause, ended_by_deposit_id=deposit_id
        )
    return len(opening) - len(closing)


def _waits_taken_back(bag_ids: list[str], deposit_id: uuid.UUID | None) -> dict[str, datetime]:
    """Since when each bag's conflict has waited, for the bags whose last episode `deposit_id` ended."""
    if deposit_id is None:
        return {}
    later = ConflictEpisode.objects.filter(bag_id=OuterRef("bag_id"), started_at__gte=OuterRef("ended_at"))
    ended = ConflictEpisode.objects.filter(bag_id__in=bag_ids, ended_by_deposit_id=deposit_id).exclude(
        Exists(later)
    )
    return {episode.bag_id: episode.waiting_from for episode in ended}


def episodes_open_existing(connection: BaseDatabaseWrapper, *, user_prefix: str = "") -> int:
    """Open an episode for every bag in conflict that has none (the migration, the bench loader).

    Dated at the oldest live directional deposit of the polarity that arrived second: when the
    bag's present disagreement began.
    """
    polarities = ", ".join(f"'{p}'" for p in DIRECTIONAL)
    sql = f"""
INSERT INTO deposits_conflictepisode (user_id, bag_id, started_at)
SELECT f.user_id, f.bag_id, f.first_at FROM (
    SELECT p.user_id, p.bag_id, p.first_at,
           row_number() OVER (PARTITION BY p.bag_id ORDER BY p.first_at) AS arrival
    FROM (
        SELECT d.user_id, d.bag_id, d.polarity, min(d.created_at) AS first_at
        FROM deposits_deposit d JOIN deposits_scopebag bag ON bag.id = d.bag_id
        WHERE bag.user_id LIKE %s AND {in_conflict_sql("bag")} AND {live_sql("d")}
          AND d.polarity IN ({polarities})
        GROUP BY d.user_id, d.bag_id, d.polarity
    ) p
) f
WHERE f.arrival = 2
  AND NOT EXISTS (SELECT 1 FROM deposits_conflictepisode e WHERE e.bag_id = f.bag_id AND e.ended_at IS NULL)
"""
    with connection.cursor() as cursor:
        cursor.execute(sql, [f"{user_prefix}%"])
        return cursor.rowcount

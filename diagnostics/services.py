"""The diagnostics job: snapshots of every owner with activity, then of the deployment."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.db.models import F, Max, Window
from django.db.models.functions import RowNumber, TruncDate
from django.utils import timezone

from atlaso_site.job_runs import JobSkipped, Progress
from beliefs.models import Belief
from deposits.models import RecallLog, ScopeBag
from diagnostics.models import Snapshot
from diagnostics.selectors import field_totals_by_owner, field_totals_pooled, snapshot_of

# Small enough that progress is written about every second at 10,000 owners.
BATCH = 200
RETENTION = timedelta(days=90)
# pg_try_advisory_lock key: "ATLS" — one recompute at a time across every process.
LOCK_KEY = 0x41544C53


@contextmanager
def _exclusive_run() -> Iterator[bool]:
    """True when this run may go ahead. PostgreSQL: an advisory lock a second run cannot take.

    SQLite: the run's transaction serialises (IMMEDIATE takes the write lock at BEGIN), so a
    second run waits for the first and then finds nothing new to snapshot.
    """
    if connection.vendor != "postgresql":
        with transaction.atomic():
            yield True
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [LOCK_KEY])
        acquired = cursor.fetchone()[0]
    try:
        yield acquired
    finally:
        if acquired:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [LOCK_KEY])


def owners_with_activity(*, all_owners: bool = False) -> list[str]:
    """Owners to snapshot: those with activity since their last snapshot, and those without one.

    Activity is any write, retraction, erasure, supersession, recall, observation or belief rebuild;
    `all_owners`: every one.

    Writes of every kind touch the bag's `updated_at`; observations and rebuilds the belief's.
    Only rows newer than the previous run are read: what came before, that run snapshotted.
    """
    previous_run = None
    if not all_owners:
        previous_run = Snapshot.objects.filter(user_id__isnull=True).aggregate(at=Max("taken_at"))["at"]
    last = dict(
        Snapshot.objects.filter(is_latest=True, user_id__isnull=False).values_list("user_id", "taken_at")
    )
    owners: set[str] = set()
    for model, stamp in ((ScopeBag, "updated_at"), (RecallLog, "created_at"), (Belief, "updated_at")):
        rows = model.objects.all()
        if previous_run is not None:
            rows = rows.filter(**{f"{stamp}__gt": previous_run})
        for user_id, newest in (
            rows.values("user_id").annotate(newest=Max(stamp)).order_by().values_list("user_id", "newest")
        ):
            if all_owners or user_id not in last or newest > last[user_id]:
                owners.add(user_id)
    return sorted(owners)


def snapshots_thin(*, now: datetime) -> int:
    """Keep every snapshot for 90 days; older ones thinned to the last of each owner's day."""
    doomed = list(
        Snapshot.objects.filter(taken_at__lt=now - RETENTION)
        .annotate(
            place=Window(
                RowNumber(),
                partition_by=[F("user_id"), TruncDate("taken_at")],
                order_by=[F("taken_at").desc(), F("id").desc()],
            )
        )
        .filter(place__gt=1)
        .values_list("id", flat=True)
    )
    for start in range(0, len(doomed), 5000):
        Snapshot.objects.filter(id__in=doomed[start : start + 5000]).delete()
    return len(doomed)


def _write(snapshots: list[Snapshot], owners: list[str | None]) -> None:
    """The new snapshots become their owners' latest, in one transaction."""
    with transaction.atomic():
        named = [o for o in owners if o is not None]
        latest = Snapshot.objects.filter(is_latest=True)
        if named:
            latest.filter(user_id__in=named).update(is_latest=False)
        if None in owners:
            latest.filter(user_id__isnull=True).update(is_latest=False)
        Snapshot.objects.bulk_create(snapshots)


def diagnostics_recompute(
    *, all_owners: bool = False, progress: Progress | None = None, now: datetime | None = None
) -> dict[str, int]:
    """Snapshot every owner with activity (or all), then the deployment, then thin old snapshots.

    Reads the live bag rows and a few grouped aggregates per batch of owners (never a recount
    of deposits), writes in batches, and reports progress per batch. A run that cannot take
    the lock ends `skipped` (raises JobSkipped).
    """
    report = progress or (lambda done, total: None)
    with _exclusive_run() as acquired:
        if not acquired:
            raise JobSkipped(
                "another recompute_diagnostics run holds the lock; it will snapshot these owners"
            )
        now = now or timezone.now()
        owners = owners_with_activity(all_owners=all_owners)
        report(0, len(owners))
        for start in range(0, len(owners), BATCH):
            batch = owners[start : start + BATCH]
            totals = field_totals_by_owner(batch, now=now)
            _write([snapshot_of(user_id, totals[user_id], now) for user_id in batch], list(batch))
            report(start + len(batch), len(owners))
        _write([snapshot_of(None, field_totals_pooled(now=now), now)], [None])
        thinned = snapshots_thin(now=now)
    return {"owners": len(owners), "snapshots": len(owners) + 1, "thinned": thinned}

"""Reads of job runs: a filtered page, one run, and what the metrics and readiness check read.

Pages come newest first; the metrics and `/readyz` read each job's last success, the runs not
finished and the processes' beats.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from django.db.models import Count, Max, Q
from django.utils import timezone

from atlaso_site.job_runs.models import JobRun, ProcessBeat, Status
from atlaso_site.lib.errors import not_found
from atlaso_site.lib.paging import Page, page_of


def job_run_page(
    *,
    name: str | None = None,
    status: str | None = None,
    limit: int = 50,
    offset: int = 0,
    now: datetime | None = None,
) -> Page[JobRun]:
    """Runs newest queued first; `status` is the reported status (`lost`, `stalled` included)."""
    runs = JobRun.objects.all()
    if name is not None:
        runs = runs.filter(name=name)
    if status is not None:
        runs = runs.reported(status, now=now or timezone.now())
    return page_of(runs.order_by("-queued_at", "-id"), limit=limit, offset=offset)


def job_run_get(*, run_id: str) -> JobRun:
    """One run; not_found for an id that is unknown or not a UUID at all."""
    try:
        key = UUID(run_id)
    except ValueError:
        raise not_found(f"there is no job run {run_id!r}") from None
    run = JobRun.objects.filter(pk=key).first()
    if run is None:
        raise not_found(f"there is no job run {run_id!r}")
    return run


def job_last_successes() -> dict[str, datetime]:
    """When each job's last successful run ended, by job name: one query."""
    rows = (
        JobRun.objects.filter(status=Status.SUCCEEDED, finished_at__isnull=False)
        .values("name")
        .annotate(last=Max("finished_at"))
        .order_by()
    )
    return {row["name"]: row["last"] for row in rows}


def job_runs_unfinished(*, now: datetime) -> dict[tuple[str, str], int]:
    """How many runs are not finished, by job name and reported status.

    The statuses are queued, running, lost and stalled; one query over the unfinished runs only.
    """
    counts: dict[tuple[str, str], int] = {}
    unfinished = JobRun.objects.filter(status__in=(Status.QUEUED, Status.RUNNING)).only(
        "name", "status", "queued_at", "heartbeat_at", "started_at", "alive_at"
    )
    for run in unfinished:
        key = (run.name, run.reported_status_at(now))
        counts[key] = counts.get(key, 0) + 1
    return counts


def process_last_beats(*, since: datetime) -> dict[str, tuple[datetime, int]]:
    """By role (worker, beat): the newest heartbeat and how many nodes beat after `since`: one query."""
    rows = (
        ProcessBeat.objects.values("role")
        .annotate(last=Max("beat_at"), alive=Count("id", filter=Q(beat_at__gte=since)))
        .order_by()
    )
    return {row["role"]: (row["last"], row["alive"]) for row in rows}

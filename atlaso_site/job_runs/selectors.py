"""Reads of job runs: a filtered page, newest first, and one run."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from django.utils import timezone

from atlaso_site.job_runs.models import JobRun
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

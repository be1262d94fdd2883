"""Recording job runs, the one way: queue a run, claim it, report progress, end it once.

A run is recorded where it is asked for (`job_enqueue`, in the caller's transaction) and sent
to a worker by the dispatcher the top app registers at start-up; the worker claims it
(`job_claim`) and a `JobRecorder` keeps the row current until it ends.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any
from uuid import UUID

from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils import timezone

from atlaso_site.lib.jobs import JobSkipped, Progress
from atlaso_site.lib.jobs.models import JobRun, Status

logger = logging.getLogger(__name__)

# Progress is written when a second has passed since the last write, on the last item, or
# when the total changes; a job that reports every item is thus on record every 1-2 s.
PROGRESS_EVERY_SECONDS = 1.0
MAX_ERROR = 4000

Dispatcher = Callable[[str], None]
_dispatcher: Dispatcher | None = None


def set_dispatcher(dispatch: Dispatcher | None) -> None:
    """Register how a queued run reaches a worker (the run's id as text).

    Called once at start-up by the app that runs the jobs: the kernel and the apps that
    record runs know neither the runner nor Celery.
    """
    global _dispatcher
    _dispatcher = dispatch


def _dispatch(run_id: str) -> None:
    if _dispatcher is None:
        logger.warning("no job dispatcher is registered: run %s stays queued and shows as stalled", run_id)
        return
    _dispatcher(run_id)


def job_record(*, name: str, trigger: str, params: Mapping[str, Any] | None = None, total: int = 0) -> JobRun:
    """A queued run that is sent nowhere: for a caller that runs it itself (a command, beat)."""
    return JobRun.objects.create(
        name=name, trigger=trigger, params=dict(params or {}), total=total, queued_at=timezone.now()
    )


def job_enqueue(
    *, name: str, trigger: str, params: Mapping[str, Any] | None = None, total: int = 0
) -> JobRun:
    """Record a queued run and hand it to a worker once the current transaction commits.

    Recorded in the caller's transaction, so a change and the run it asks for commit together
    or not at all; sent after the commit, so a worker never looks for a run that is not there.
    A broker that refuses it is logged, and the run is reported stalled.
    """
    run = job_record(name=name, trigger=trigger, params=params, total=total)
    transaction.on_commit(partial(_dispatch, str(run.pk)), robust=True)
    return run


def job_claim(run_id: str | UUID) -> JobRecorder | None:
    """Take a queued run (queued → running in one UPDATE), or None.

    None when it is not on record or another delivery of it took it already: a message the
    broker delivers twice (a worker killed mid-run, then redelivered) does nothing the second time.
    """
    now = timezone.now()
    claimed = JobRun.objects.filter(pk=run_id, status=Status.QUEUED).update(
        status=Status.RUNNING, started_at=now, heartbeat_at=now
    )
    return JobRecorder(JobRun.objects.get(pk=run_id)) if claimed else None


class JobRecorder:
    """The runner's side of one claimed run: progress while it runs, then exactly one outcome.

    Every write commits at once, so other connections watch the run move. A job may open its
    own transaction around its work; on PostgreSQL progress made inside it is then written on a
    second connection, so it is still seen (and a heartbeat) before the job commits. SQLite
    has one writer at a time, so there it lands with the job's own commit.
    """

    def __init__(self, run: JobRun, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.run = run
        self.clock = clock
        self._last_write = clock()
        # Claimed inside a caller's transaction (a test, an eager task): every write stays in it.
        self._in_caller_transaction = connections[DEFAULT_DB_ALIAS].in_atomic_block
        self._side: BaseDatabaseWrapper | None = None
        self._side_alias = f"job-progress-{run.pk}"

    def progress(self, done: int, total: int) -> None:
        """Record progress; written when a second has passed, on the last item, or a new total."""
        new_total = total != self.run.total
        self.run.done, self.run.total = done, total
        now = self.clock()
        if new_total or done >= total or now - self._last_write >= PROGRESS_EVERY_SECONDS:
            self._last_write = now
            self._write(done=done, total=total, heartbeat_at=timezone.now())

    def succeed(self, counts: Mapping[str, Any]) -> JobRun:
        return self._finish(Status.SUCCEEDED, counts=dict(counts))

    def fail(self, error: str) -> JobRun:
        return self._finish(Status.FAILED, error=error[:MAX_ERROR])

    def skip(self, reason: str) -> JobRun:
        """The job chose not to work (another run holds its lock): the reason is in `counts`."""
        return self._finish(Status.SKIPPED, counts={"reason": reason})

    def run_with(self, work: Callable[[Progress], Mapping[str, Any]]) -> JobRun:
        """Call `work(progress)` and record how it ended: its counts, its skip, or its error."""
        try:
            counts = work(self.progress)
        except JobSkipped as skipped:
            return self.skip(str(skipped))
        except Exception as error:
            logger.exception("job run %s (%s) failed", self.run.pk, self.run.name)
            return self.fail(f"{type(error).__name__}: {error}")
        return self.succeed(counts)

    def _finish(self, status: str, **fields: Any) -> JobRun:
        now = timezone.now()
        try:
            self._write(
                status=status,
                finished_at=now,
                heartbeat_at=now,
                done=self.run.done,
                total=self.run.total,
                **fields,
            )
        finally:
            self._close_side()
        return self.run

    def _write(self, **fields: Any) -> None:
        JobRun.objects.using(self._alias()).filter(pk=self.run.pk, status=Status.RUNNING).update(**fields)
        for field, value in fields.items():
            setattr(self.run, field, value)

    def _alias(self) -> str:
        """The job's own connection, unless the job holds a transaction of its own open."""
        default = connections[DEFAULT_DB_ALIAS]
        if self._in_caller_transaction or not default.in_atomic_block or default.vendor != "postgresql":
            return DEFAULT_DB_ALIAS
        if self._side is None:
            self._side = connections.create_connection(DEFAULT_DB_ALIAS)
            connections[self._side_alias] = self._side
        return self._side_alias

    def _close_side(self) -> None:
        if self._side is not None:
            self._side.close()
            del connections[self._side_alias]
            self._side = None

"""Recording job runs, the one way: queue a run, claim it, report progress, end it once.

A run is recorded where it is asked for (`job_enqueue`, in the caller's transaction) and sent
to a worker by the dispatcher the top app registers at start-up; the worker claims it
(`job_claim`) and a `JobRecorder` keeps the row current until it ends. The row is the truth:
a run the broker refused, or whose worker died, is sent again by `job_sweep` (beat runs it
every JOB_SWEEP_SECONDS) until a worker finishes it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from functools import partial
from typing import Any
from uuid import UUID

from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import F, Q, TextField
from django.db.models.functions import Cast, Coalesce
from django.utils import timezone

from atlaso_site.job_runs import JobSkipped, Progress
from atlaso_site.job_runs.models import (
    LOST,
    JobRun,
    ProcessBeat,
    Status,
    beat_lost_after,
    heartbeat_every,
    lost_rule,
    stalled_after,
)
from atlaso_site.observability.metrics import count_job_run

logger = logging.getLogger(__name__)

# Progress is written when a second has passed since the last write, on the last item, or
# when the total changes; a job that reports every item is thus on record every 1-2 s.
PROGRESS_EVERY_SECONDS = 1.0
MAX_ERROR = 4000
# A queued run never handed to the broker this long after it was queued is sent by the sweep:
# long enough that the sweep does not race the send made right after the commit.
SEND_GRACE = timedelta(seconds=5)

# A process's heartbeat row whose process has not beaten this long is gone for good (a worker
# on a host that no longer exists): the next beat of its role deletes it.
FORGET_PROCESS_AFTER = timedelta(days=1)

Dispatcher = Callable[[str], None]
_dispatcher: Dispatcher | None = None


def set_dispatcher(dispatch: Dispatcher | None) -> None:
    """Register how a queued run reaches a worker (the run's id as text).

    Called once at start-up by the app that runs the jobs: the kernel and the apps that
    record runs know neither the runner nor Celery.
    """
    global _dispatcher
    _dispatcher = dispatch


def job_send(run_id: str | UUID) -> bool:
    """Hand a queued run to the broker; False, logged, when there is no dispatcher or it refused.

    Never raises: a run the broker refused stays queued with no `sent_at`, and the sweep sends
    it again, so a change committed with its run never fails for want of a broker.
    """
    if _dispatcher is None:
        logger.warning("no job dispatcher is registered: run %s stays queued and shows as stalled", run_id)
        return False
    try:
        _dispatcher(str(run_id))
    except Exception as error:
        logger.warning(
            "run %s could not be sent (%s: %s); the sweep sends it again", run_id, type(error).__name__, error
        )
        return False
    # Taken already (or run inline, when eager): nothing to note.
    JobRun.objects.filter(pk=run_id, status=Status.QUEUED).update(sent_at=timezone.now())
    return True


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
    A broker that refuses it leaves it queued for the sweep to send (`job_send`).
    """
    run = job_record(name=name, trigger=trigger, params=params, total=total)
    transaction.on_commit(partial(job_send, run.pk), robust=True)
    return run


def _takeable(now: datetime) -> Q:
    """A run a delivery may take: queued, or running and lost (its worker's heartbeat stopped)."""
    return Q(status=Status.QUEUED) | (Q(status=Status.RUNNING) & lost_rule(now))


def job_claim(run_id: str | UUID) -> JobRecorder | None:
    """Take a run (→ running in one UPDATE, one more attempt), or None.

    A queued run is taken by the first delivery; a running one only once it is lost (its
    worker died). So a second delivery of a run that is still moving elsewhere does nothing,
    and when two deliveries race the database lets exactly one take it. Claimed outside any
    transaction, the run's heartbeat starts at once (its recorder keeps it beating); inside a
    caller's transaction nobody else could see a beat, so there is none.
    """
    now = timezone.now()
    beats = not connections[DEFAULT_DB_ALIAS].in_atomic_block
    claimed = (
        JobRun.objects.filter(pk=run_id)
        .with_last_sign()
        .filter(_takeable(now))
        .update(
            status=Status.RUNNING,
            started_at=now,
            heartbeat_at=now,
            alive_at=now if beats else None,
            done=0,
            attempts=F("attempts") + 1,
        )
    )
    if not claimed:
        return None
    run = JobRun.objects.get(pk=run_id)
    logger.info("job run %s (%s) started, attempt %d", run.pk, run.name, run.attempts)
    return JobRecorder(run)


def job_claim_or_watch(
    run_id: str | UUID, *, sleep: Callable[[float], None] = time.sleep
) -> JobRecorder | None:
    """Take a run, or watch its heartbeat while it runs elsewhere and take it once that is lost.

    Taken once `beat_lost_after()` passes without a beat; None as soon as it beats again or ends.

    The delivery of a worker whose pool process was killed: the worker's main process hands its
    message out again at once, while the dead process's last beat is still fresh. Watching
    costs this delivery's worker at most `beat_lost_after()`; a delivery of a run that is alive
    elsewhere learns it within one beat.
    """
    recorder = job_claim(run_id)
    if recorder is not None:
        return recorder
    seen = _last_beat(run_id)
    if seen is None:
        return None  # ended, queued again and taken, or a run nobody beats for
    deadline = time.monotonic() + beat_lost_after().total_seconds() + heartbeat_every() + 1
    while time.monotonic() < deadline:
        sleep(min(1.0, heartbeat_every()))
        recorder = job_claim(run_id)
        if recorder is not None:
            logger.warning("job run %s: its worker stopped beating; taken over by a new delivery", run_id)
            return recorder
        if _last_beat(run_id) != seen:
            return None
    return None


def _last_beat(run_id: str | UUID) -> datetime | None:
    return JobRun.objects.filter(pk=run_id, status=Status.RUNNING).values_list("alive_at", flat=True).first()


def job_sweep(*, now: datetime | None = None) -> list[str]:
    """Send again every unfinished run that no worker has; the ids sent.

    - a running run that is lost (its worker's heartbeat stopped: see `reported_status`) is queued
      again, same id, progress back to 0 (a job starts over; every job is safe to run twice);
    - a queued run never handed to the broker (it refused, or the process died after the
      commit) is sent once SEND_GRACE has passed;
    - a queued run sent `stalled_after()` ago that no worker took is sent again (the broker
      may have lost the message); a run still waiting in a busy queue gets one duplicate per
      period, which its claim makes harmless.
    """
    now = now or timezone.now()
    runs = JobRun.objects.all()
    requeued = []
    for run_id in runs.reported(LOST, now=now).order_by("queued_at").values_list("pk", flat=True):
        # The same rule again in the UPDATE: a run that moved meanwhile is left alone.
        if (
            runs.filter(pk=run_id)
            .reported(LOST, now=now)
            .update(
                status=Status.QUEUED, started_at=None, heartbeat_at=now, alive_at=None, sent_at=None, done=0
            )
        ):
            logger.warning("job run %s stopped moving (its worker died?): queued again", run_id)
            requeued.append(run_id)
    waiting = runs.filter(status=Status.QUEUED).alias(waiting_since=Coalesce("heartbeat_at", "queued_at"))
    due = waiting.filter(
        Q(sent_at__isnull=True, waiting_since__lt=now - SEND_GRACE) | Q(sent_at__lt=now - stalled_after())
    )
    unsent = list(due.order_by("queued_at").values_list("pk", flat=True))
    return [str(run_id) for run_id in [*requeued, *unsent] if job_send(run_id)]


class Heartbeat:
    """A thread that writes a running run's `alive_at` every `heartbeat_every()` seconds until stopped.

    It beats whatever the job's progress, on a database connection of its own.

    It beats while this attempt holds the run, so a worker that dies stops it, and a run the
    sweep gave to another worker is not kept alive by a first attempt that was only slow.
    """

    def __init__(self, run: JobRun) -> None:
        self.run_id = run.pk
        self.attempt = run.attempts
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"job-heartbeat-{run.pk}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _beat(self) -> None:
        try:
            while not self._stop.wait(heartbeat_every()):
                try:
                    JobRun.objects.filter(
                        pk=self.run_id, status=Status.RUNNING, attempts=self.attempt
                    ).update(alive_at=timezone.now())
                except DatabaseError as error:  # the database is away: the next beat tries again
                    logger.warning("job run %s: heartbeat not written (%s)", self.run_id, error)
        finally:
            connections.close_all()  # this thread's own connections


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
        """Call `work(progress)` with the run's heartbeat beating, and record how it ended.

        The record is its counts, its skip, or its error.
        """
        heartbeat = Heartbeat(self.run) if self.run.alive_at is not None else None
        try:
            if heartbeat is not None:
                heartbeat.start()
            counts = work(self.progress)
        except JobSkipped as skipped:
            return self._stopped(heartbeat).skip(str(skipped))
        except Exception as error:
            logger.exception("job run %s (%s) failed", self.run.pk, self.run.name)
            return self._stopped(heartbeat).fail(f"{type(error).__name__}: {error}")
        return self._stopped(heartbeat).succeed(counts)

    def _stopped(self, heartbeat: Heartbeat | None) -> JobRecorder:
        if heartbeat is not None:
            heartbeat.stop()
        return self

    def _finish(self, status: str, **fields: Any) -> JobRun:
        now = timezone.now()
        try:
            written = self._write(
                status=status,
                finished_at=now,
                heartbeat_at=now,
                done=self.run.done,
                total=self.run.total,
                **fields,
            )
        finally:
            self._close_side()
        if not written:
            return self.run  # another attempt holds the run now: its end is that one's to count
        count_job_run(self.run.name, status)
        took = (now - self.run.started_at).total_seconds() if self.run.started_at else 0.0
        logger.info("job run %s (%s) %s in %.1f s", self.run.pk, self.run.name, status, took)
        return self.run

    def _write(self, **fields: Any) -> int:
        """Write `fields` to the run's row while this attempt holds it; 1 when written, else 0."""
        # Only while this attempt holds the run: once the sweep gave a lost run to another
        # worker, a first attempt that was merely slow writes nothing over it.
        written = (
            JobRun.objects.using(self._alias())
            .filter(pk=self.run.pk, status=Status.RUNNING, attempts=self.run.attempts)
            .update(**fields)
        )
        for field, value in fields.items():
            setattr(self.run, field, value)
        return written

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


def process_beat(*, role: str, node: str, at: datetime) -> None:
    """Record that the worker or beat `node` was alive at `at`, in one insert-or-update.

    Its role's rows that have been silent for a day are forgotten.
    """
    ProcessBeat.objects.bulk_create(
        [ProcessBeat(role=role, node=node, beat_at=at)],
        update_conflicts=True,
        unique_fields=["role", "node"],
        update_fields=["beat_at"],
    )
    ProcessBeat.objects.filter(role=role, beat_at__lt=at - FORGET_PROCESS_AFTER).delete()


# What a forgotten owner's id is replaced by in a run's error text.
FORGOTTEN = "[forgotten owner]"


def _without_owner(value: Any, user_id: str) -> Any:
    """`value` (a run's params or counts) with every mention of the owner gone.

    An entry of a list that names it (a verify run's [user_id, key]) is dropped, a text that holds
    it reworded.
    """
    if isinstance(value, str):
        return value.replace(user_id, FORGOTTEN)
    if isinstance(value, list):
        return [_without_owner(v, user_id) for v in value if not _names(v, user_id)]
    if isinstance(value, dict):
        return {k: _without_owner(v, user_id) for k, v in value.items() if k != user_id}
    return value


def _names(value: Any, user_id: str) -> bool:
    if isinstance(value, str):
        return value == user_id
    if isinstance(value, (list, dict)):
        return any(_names(v, user_id) for v in (value.values() if isinstance(value, dict) else value))
    return False


def job_runs_forget_owner(user_id: str) -> int:
    """Remove the owner from every run that names it; returns the runs changed.

    Its params, its counts and its error, inside the caller's transaction. The runs stay: they are
    the deployment's record, and the owner is not theirs to keep.
    """
    runs = JobRun.objects.annotate(
        params_text=Cast("params", TextField()), counts_text=Cast("counts", TextField())
    )
    mentions = runs.filter(
        Q(params_text__contains=user_id) | Q(counts_text__contains=user_id) | Q(error__contains=user_id)
    )
    changed = 0
    for run in mentions.select_for_update(of=("self",)):
        JobRun.objects.filter(pk=run.pk).update(
            params=_without_owner(run.params, user_id),
            counts=_without_owner(run.counts, user_id),
            error=None if run.error is None else run.error.replace(user_id, FORGOTTEN),
        )
        changed += 1
    return changed

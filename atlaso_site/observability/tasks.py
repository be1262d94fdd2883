"""Celery's side of watching: request ids, heartbeats, logging and a pool process's metrics.

The request id carried from a request to the task it sends, the worker's and beat's heartbeats (read
by `/readyz`), one logging set-up for every process, and the metrics files of a pool process that
ends.

Connected by `atlaso_site.celery`, so every process that loads the Celery app has them. That
module is imported before Django is set up (`celery -A atlaso_site`), so the models are
imported where they are used.
"""

from __future__ import annotations

import logging
import logging.config
import os
import socket
import threading
from collections.abc import Callable
from contextvars import Token
from datetime import datetime
from typing import Any

from celery import bootsteps
from celery.beat import PersistentScheduler
from celery.signals import (
    before_task_publish,
    setup_logging,
    task_postrun,
    task_prerun,
    worker_process_shutdown,
)
from django.conf import settings
from django.db import connections
from django.utils import timezone

from atlaso_site.observability.context import (
    current_request_id,
    enter_request_id,
    leave_request_id,
    sane_request_id,
)

logger = logging.getLogger(__name__)

# The roles of `atlaso_site.job_runs.models.ProcessRole`.
WORKER = "worker"
BEAT = "beat"
# The message header that carries the id of the request that sent a task.
REQUEST_ID_HEADER = "atlaso_request_id"
_entered: dict[str, Token[str | None]] = {}


@setup_logging.connect
def configure_logging(**kwargs: Any) -> None:
    """The worker and beat log as the web process does, instead of with Celery's own set-up.

    settings.LOGGING: LOG_FORMAT, and the request id.
    """
    logging.config.dictConfig(settings.LOGGING)


@before_task_publish.connect
def carry_request_id(headers: dict[str, Any] | None = None, **kwargs: Any) -> None:
    """A task sent while a request is answered carries the request's id."""
    request_id = current_request_id()
    if request_id is not None and headers is not None:
        headers[REQUEST_ID_HEADER] = request_id


@task_prerun.connect
def enter_task_request_id(task_id: str | None = None, task: Any = None, **kwargs: Any) -> None:
    """A task runs under the id of the request that sent it, so its log lines carry it."""
    if task_id is None or task is None:
        return
    sent = getattr(task.request, REQUEST_ID_HEADER, None)
    _entered[task_id] = enter_request_id(sane_request_id(sent if isinstance(sent, str) else None))


@task_postrun.connect
def leave_task_request_id(task_id: str | None = None, **kwargs: Any) -> None:
    token = _entered.pop(task_id, None) if task_id is not None else None
    if token is not None:
        leave_request_id(token)


@worker_process_shutdown.connect
def forget_live_figures(**kwargs: Any) -> None:
    """A pool process that ends takes its live gauges with it (counters stay counted)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(os.getpid())


class Heartbeat:
    """A thread that records every PROCESS_HEARTBEAT_SECONDS that a worker or beat lives.

    It records the time `alive_at()` gives: now, for a worker; the last tick, for beat.

    On a connection opened and closed for each beat: the worker's main process forks its pool,
    which must inherit no open connection. A beat the database refuses is logged; the next
    one tries again.
    """

    def __init__(self, role: str, node: str, alive_at: Callable[[], datetime | None]) -> None:
        self.role, self.node, self.alive_at = role, node, alive_at
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"{role}-heartbeat", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def _run(self) -> None:
        interval = settings.PROCESS_HEARTBEAT_SECONDS
        while True:
            self.beat()
            if self._stop.wait(interval):
                return

    def beat(self) -> None:
        from atlaso_site.job_runs.services import process_beat

        at = self.alive_at()
        if at is None:
            return
        try:
            process_beat(role=self.role, node=self.node, at=at)
        except Exception as error:  # the database is away: the next beat tries again
            logger.warning("%s %s: heartbeat not written (%s)", self.role, self.node, type(error).__name__)
        finally:
            connections.close_all()


class WorkerHeartbeat(bootsteps.StartStopStep):
    """The Celery worker's heartbeat, from its start (after its pool) to its stop."""

    requires = {"celery.worker.components:Pool"}

    def __init__(self, worker: Any, **kwargs: Any) -> None:
        super().__init__(worker, **kwargs)
        self.heartbeat: Heartbeat | None = None

    def start(self, worker: Any) -> None:
        self.heartbeat = Heartbeat(WORKER, worker.hostname, timezone.now)
        self.heartbeat.start()

    def stop(self, worker: Any) -> None:
        if self.heartbeat is not None:
            self.heartbeat.stop()


class TickingScheduler(PersistentScheduler):
    """Celery beat's scheduler, keeping the time of its last tick as beat's heartbeat.

    Beat's loop ticks at least every CELERY_BEAT_MAX_LOOP_INTERVAL (the heartbeat's period),
    whatever is due, so a beat whose loop stopped goes stale even though its process lives.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.last_tick: datetime | None = None
        self.heartbeat: Heartbeat | None = None

    def tick(self, *args: Any, **kwargs: Any) -> float:
        self.last_tick = timezone.now()
        if self.heartbeat is None:
            self.heartbeat = Heartbeat(BEAT, f"beat@{socket.gethostname()}", self._last_tick)
            self.heartbeat.start()
        return super().tick(*args, **kwargs)

    def _last_tick(self) -> datetime | None:
        return self.last_tick

    def close(self) -> None:
        if self.heartbeat is not None:
            self.heartbeat.stop()
        super().close()

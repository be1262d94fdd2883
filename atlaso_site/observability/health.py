"""`/healthz` (the process answers) and `/readyz` (it can do its work), cheap enough to poll.

Either may be polled every second.

`/readyz` answers one entry per check, each with its `state` (`ok` or `failing`) and `time`,
and 503 when any fails:

- `database`: a `SELECT 1` on the request's own connection;
- `migrations`: no migration on disk is unapplied (the list on disk is read once per process,
  the applied ones each time: one small query);
- `broker`: Redis answers PING (or, with the filesystem broker, its folder is writable);
- `worker`: some Celery worker's heartbeat is younger than `PROCESS_HEARTBEAT_STALE_SECONDS`;
- `beat`: Celery beat's last tick is younger than that.

Failures say what failed in a word (the exception's class), never a host, a path or a password.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.http import HttpRequest, JsonResponse
from django.utils import timezone

from atlaso_site.job_runs.models import ProcessRole
from atlaso_site.job_runs.selectors import process_last_beats

OK = "ok"
FAILING = "failing"
# How long the broker check waits for Redis to answer.
BROKER_TIMEOUT_SECONDS = 1.0


@dataclass
class Check:
    """One check's answer: its state, the time it is about, and what else it says."""

    state: str
    time: datetime
    details: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"state": self.state, "time": self.time.isoformat(), **self.details}


def healthz(request: HttpRequest) -> JsonResponse:
    """The process answers: nothing else is touched."""
    return JsonResponse({"kind": "health", "state": OK})


def readyz(request: HttpRequest) -> JsonResponse:
    """Every check, and 503 when any fails."""
    checks = readiness()
    ready = all(check.state == OK for check in checks.values())
    body = {
        "kind": "readiness",
        "state": OK if ready else FAILING,
        "checks": {name: check.as_json() for name, check in checks.items()},
    }
    response = JsonResponse(body, status=200 if ready else 503)
    response["Cache-Control"] = "no-store"
    return response


def readiness(*, now: Callable[[], datetime] = timezone.now) -> dict[str, Check]:
    """The five checks, waiting for the database once rather than three times.

    When the database cannot be reached, the three checks that read it say so without trying again.
    """
    database = _timed(_database_answers, now)
    checks = {"database": database}
    if database.state == OK:
        checks["migrations"] = _timed(_unapplied_migrations, now)
        checks.update(_heartbeats(now()))
    else:
        unknown = Check(FAILING, now(), {"error": "database unavailable"})
        checks.update(migrations=unknown, worker=unknown, beat=unknown)
    checks["broker"] = _timed(_broker_answers, now)
    return {name: checks[name] for name in ("database", "migrations", "broker", "worker", "beat")}


def _timed(probe: Callable[[], dict[str, Any] | None], now: Callable[[], datetime]) -> Check:
    """Run a probe: ok with what it said, or failing with the class of what it raised."""
    started = time.perf_counter()
    try:
        said = probe()
    except Exception as error:
        details: dict[str, Any] = {"error": type(error).__name__}
        state = FAILING
    else:
        details = dict(said or {})
        state = FAILING if details.pop("failing", False) else OK
    details["ms"] = round((time.perf_counter() - started) * 1000, 1)
    return Check(state, now(), details)


def _database_answers() -> None:
    connection = connections[DEFAULT_DB_ALIAS]
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _unapplied_migrations() -> dict[str, Any]:
    from django.db.migrations.recorder import MigrationRecorder

    # The recorder's own table, read directly (its `applied_migrations` asks first whether the
    # table exists: a second query each poll).
    applied = set(MigrationRecorder.Migration.objects.values_list("app", "name"))
    unapplied = sorted(f"{app}.{name}" for app, name in _migrations_on_disk() - applied)
    return {"unapplied": unapplied, "failing": bool(unapplied)}


@functools.cache
def _migrations_on_disk() -> frozenset[tuple[str, str]]:
    """Every migration of this version (read once: the code does not change under a process)."""
    from django.db.migrations.loader import MigrationLoader

    return frozenset(MigrationLoader(None, ignore_no_migrations=True).graph.nodes)


def _heartbeats(now: datetime) -> dict[str, Check]:
    """The worker's and beat's checks from their heartbeats: one query."""
    stale_after = timedelta(seconds=settings.PROCESS_HEARTBEAT_STALE_SECONDS)
    beats = process_last_beats(since=now - stale_after)
    checks = {}
    for role in (ProcessRole.WORKER, ProcessRole.BEAT):
        last, alive = beats.get(role, (None, 0))
        if last is None:
            checks[str(role)] = Check(FAILING, now, {"error": "no heartbeat on record", "alive": 0})
            continue
        age = max(0.0, (now - last).total_seconds())
        state = OK if alive else FAILING
        details: dict[str, Any] = {"age_seconds": round(age, 1), "alive": alive}
        if state == FAILING:
            details["error"] = f"last heartbeat {age:.0f} s ago"
        checks[str(role)] = Check(state, last, details)
    return checks


def _broker_answers() -> dict[str, Any] | None:
    if not settings.REDIS_URL:
        folder = settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"]
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            return {"error": "the broker's folder is missing or not writable", "failing": True}
        return None
    _redis().ping()
    return None


@functools.cache
def _redis() -> Any:
    """This process's client of the broker's Redis (its pool keeps the connection)."""
    import redis

    return redis.Redis.from_url(
        settings.REDIS_URL,
        socket_connect_timeout=BROKER_TIMEOUT_SECONDS,
        socket_timeout=BROKER_TIMEOUT_SECONDS,
    )

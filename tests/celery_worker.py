"""A real Celery worker process on the test database and a real Redis broker (REDIS_URL)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def celery_worker(settings: Any, *, pool: str = "solo") -> Iterator[subprocess.Popen]:
    """A worker on the test database; skips without REDIS_URL (CI sets it). Stopped at the end."""
    redis_url = os.environ.get("REDIS_URL")
    if not redis_url:
        pytest.skip("needs a Redis broker: set REDIS_URL (CI does)")
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: run with DATABASE_URL=postgres://… (CI does)")
    # Sent from this process to the broker, never run here.
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = redis_url
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        "REDIS_URL": redis_url,
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "DEBUG": "true",
    }
    command = [sys.executable, "-m", "celery", "-A", "atlaso_site", "worker", "--pool", pool]
    if pool == "prefork":
        command += ["--concurrency", "1"]
    process = subprocess.Popen(
        [*command, "--loglevel", "WARNING"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def wait_until[T](
    read: Callable[[], T], done: Callable[[T], bool], *, worker: subprocess.Popen, timeout: float = 60
) -> T:
    """Poll `read()` until `done` holds of it; fail with the worker's last words if it died."""
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if done(value):
            return value
        if worker.poll() is not None:
            raise AssertionError(worker.stderr.read().decode()[-2000:] if worker.stderr else "worker exited")
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {timeout} s; last seen: {value!r}")
        time.sleep(0.2)


def pool_children(worker: subprocess.Popen) -> list[int]:
    """The pids of a prefork worker's pool processes."""
    path = Path(f"/proc/{worker.pid}/task/{worker.pid}/children")
    return [int(pid) for pid in path.read_text().split()] if path.exists() else []

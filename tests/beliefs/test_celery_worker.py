"""A tier change is rebuilt by a real Celery worker, through a real Redis broker."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

import pytest
from django.conf import settings as django_settings
from django.db import connection

from beliefs.models import RebuildJob
from beliefs.selectors import belief_verdict
from beliefs.services import tier_update
from tests.conftest import make_client

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture
def worker(on_postgres: None):
    """A worker process on the test database; it needs Redis (REDIS_URL), as CI provides."""
    redis_url = os.environ.get("REDIS_URL")
    if not redis_url:
        pytest.skip("needs a Redis broker: set REDIS_URL (CI does)")
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        "REDIS_URL": redis_url,
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "DEBUG": "true",
    }
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "atlaso_site",
            "worker",
            "--pool",
            "solo",
            "--loglevel",
            "WARNING",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    yield process
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()


def test_lowering_a_ceiling_is_rebuilt_by_the_worker_and_the_channel_stops_counting(worker, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = os.environ["REDIS_URL"]
    assert django_settings.CELERY_BROKER_URL.startswith("redis://")
    agent = make_client(channel="agent-worker", tier="agent_own")
    answer = agent.post("/users/alice/beliefs/diet:milk/observations", {"value": "oat milk"})
    assert answer.status == 201
    assert belief_verdict(user_id="alice", key="diet:milk").fact == "oat milk"

    # Were the task run in this process (eagerly), this would fail it: only the worker may run it.
    with mock.patch("beliefs.tasks.rebuild_run", side_effect=AssertionError("ran in the test process")):
        _, job = tier_update(name="agent_own", ceiling=0.4)
    assert job is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.status in (RebuildJob.DONE, RebuildJob.FAILED):
            break
        assert worker.poll() is None, (
            worker.stderr.read().decode()[-2000:] if worker.stderr else "worker exited"
        )
        time.sleep(0.2)
    assert job.status == RebuildJob.DONE, job.error
    assert (job.total, job.done) == (1, 1)
    verdict = belief_verdict(user_id="alice", key="diet:milk")
    assert verdict.fact is None and verdict.unknown_mass == 1.0

"""Job runs through a real Celery worker and a real Redis broker.

A run ends; a killed one is taken again once its heartbeat stops, by its own message handed out
again or by the sweep.
"""

from __future__ import annotations

import os
import signal
import time
from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone

from atlaso_site.job_runs.models import JobRun
from atlaso_site.job_runs.services import job_record
from beliefs.models import Belief
from tests.beliefs.helpers import OLD, observe
from tests.celery_worker import celery_worker, pool_children, wait_until
from tests.conftest import make_client

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.postgres,
    pytest.mark.redis,
]


# Enough beliefs that verifying them takes several seconds (progress shows after the first).
BELIEFS = 8000


def ended(body: dict) -> bool:
    return body["status"] in ("succeeded", "failed", "skipped")


def test_a_run_started_through_the_api_is_taken_by_the_worker_and_succeeds(settings):
    with celery_worker(settings) as worker:
        admin = make_client(channel="ops", perms=("read", "admin"))
        observe(make_client(), OLD)
        # Were the run run in this process (eagerly), this would fail it: only the worker may run it.
        with mock.patch(
            "diagnostics.job_runner.job_execute", side_effect=AssertionError("ran in the test process")
        ):
            started = admin.post("/jobs/verify_beliefs/runs")
        assert started.status == 202, started.body
        assert (started.body["status"], started.body["trigger"]) == ("queued", "api")
        run = wait_until(lambda: admin.get(f"/jobs/{started.body['id']}").body, ended, worker=worker)
    assert (run["status"], run["error"]) == ("succeeded", None)
    assert run["counts"] == {"checked": 1, "mismatched": 0, "mismatches": []}
    assert (run["done"], run["total"]) == (1, 1)
    assert run["queued_at"] <= run["started_at"] <= run["finished_at"]


def test_recompute_diagnostics_started_through_the_api_snapshots_every_owner_on_the_worker(settings):
    with celery_worker(settings) as worker:
        admin = make_client(channel="ops", perms=("read", "admin"))
        writer = make_client()
        for owner in ("alice", "bob"):
            body = {"content": "alpha holds", "polarity": "open", "scope": {"model": "m", "env": "prod"}}
            assert writer.post(f"/users/{owner}/deposits", body).status == 201
        started = admin.post("/jobs/recompute_diagnostics/runs")
        assert started.status == 202, started.body
        assert (started.body["status"], started.body["trigger"]) == ("queued", "api")
        run = wait_until(lambda: admin.get(f"/jobs/{started.body['id']}").body, ended, worker=worker)
    assert (run["status"], run["error"]) == ("succeeded", None)
    assert run["counts"] == {"owners": 2, "snapshots": 3, "thinned": 0}
    assert (run["done"], run["total"]) == (2, 2)
    history = admin.get("/users/alice/health/history").body
    assert len(history["points"]) == 1
    assert history["points"][0]["deposit_count"] == 1


def test_a_worker_that_starts_sends_a_run_the_broker_refused_before_it(settings):
    # Recorded a minute ago and never handed to the broker (it was down); no beat runs here.
    run = job_record(name="expire_idempotency_keys", trigger="api")
    JobRun.objects.filter(pk=run.pk).update(queued_at=timezone.now() - timedelta(minutes=1))
    admin = make_client(channel="ops", perms=("read", "admin"))
    with celery_worker(settings) as worker:
        finished = wait_until(lambda: admin.get(f"/jobs/{run.pk}").body, ended, worker=worker)
    assert (finished["status"], finished["counts"]) == ("succeeded", {"deleted": 0})


def test_a_pool_process_killed_mid_run_leaves_the_same_run_to_the_next_one_once_its_heartbeat_stops(
    settings, monkeypatch
):
    # Beats every second, lost after four without one (5 s and 30 s by default), in the worker
    # and in this process, which reports the run.
    for name, value in (("JOB_HEARTBEAT_SECONDS", 1), ("JOB_HEARTBEAT_LOST_AFTER_SECONDS", 4)):
        monkeypatch.setenv(name, str(value))
        setattr(settings, name, value)
    now = timezone.now()
    Belief.objects.bulk_create(
        Belief(user_id=f"owner-{n // 100}", key=f"key-{n}", state={"empty": True}, updated_at=now)
        for n in range(BELIEFS)
    )
    admin = make_client(channel="ops", perms=("read", "admin"))
    with celery_worker(settings, pool="prefork") as worker:
        started = admin.post("/jobs/verify_beliefs/runs").body
        path = f"/jobs/{started['id']}"
        moving = wait_until(lambda: admin.get(path).body, lambda run: run["done"] > 0, worker=worker)
        assert (moving["status"], moving["total"]) == ("running", BELIEFS)
        beat = JobRun.objects.get(pk=started["id"]).alive_at
        assert beat is not None and timezone.now() - beat < timedelta(seconds=3)
        [child] = pool_children(worker)
        os.kill(child, signal.SIGKILL)
        killed = time.monotonic()

        # The message is handed out again at once (acks_late, reject_on_worker_lost) to a new
        # pool process, which watches the run's heartbeat: the dead process's has stopped, so
        # the run is lost four seconds later and that delivery takes it; the same run ends.
        wait_until(
            lambda: JobRun.objects.get(pk=started["id"]).attempts, lambda n: n == 2, worker=worker, timeout=30
        )
        taken_after = time.monotonic() - killed
        run = wait_until(lambda: admin.get(path).body, ended, worker=worker, timeout=180)
        assert worker.poll() is None
    assert (run["status"], run["error"], run["done"], run["total"]) == ("succeeded", None, BELIEFS, BELIEFS)
    assert run["counts"] == {"checked": BELIEFS, "mismatched": 0, "mismatches": []}
    assert JobRun.objects.get(pk=started["id"]).attempts == 2
    assert 4 <= taken_after < 20, taken_after


def test_a_run_whose_heartbeat_stopped_is_lost_and_the_sweep_sends_it_to_a_worker_that_ends_it(settings):
    # A worker killed whole: its message stays with the broker, and nobody watches the run.
    run = job_record(name="expire_idempotency_keys", trigger="api")
    long_ago = timezone.now() - timedelta(minutes=1)
    JobRun.objects.filter(pk=run.pk).update(
        status="running", started_at=long_ago, heartbeat_at=long_ago, alive_at=long_ago, attempts=1
    )
    admin = make_client(channel="ops", perms=("read", "admin"))
    assert admin.get(f"/jobs/{run.pk}").body["status"] == "lost"
    assert [item["id"] for item in admin.get("/jobs?status=lost").body["items"]] == [str(run.pk)]
    with celery_worker(settings) as worker:
        # The worker's start-up sweep queues it again and sends it.
        finished = wait_until(lambda: admin.get(f"/jobs/{run.pk}").body, ended, worker=worker)
    assert (finished["status"], finished["counts"]) == ("succeeded", {"deleted": 0})
    assert JobRun.objects.get(pk=run.pk).attempts == 2

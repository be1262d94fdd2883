"""Job runs through a real Celery worker and a real Redis broker: a run ends; a killed one is
lost until the sweep sends it again, and then it ends."""

from __future__ import annotations

import os
import signal
import time
from datetime import timedelta
from unittest import mock

import pytest
from django.db.models import F
from django.utils import timezone

from atlaso_site.job_runs.models import JobRun
from atlaso_site.job_runs.services import job_record, job_sweep
from beliefs.models import Belief
from tests.beliefs.helpers import OLD, observe
from tests.celery_worker import celery_worker, pool_children, wait_until
from tests.conftest import make_client

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.postgres,
    pytest.mark.redis,
]


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


def test_a_worker_killed_mid_run_is_lost_until_the_sweep_sends_it_again_and_the_same_run_ends(settings):
    # Enough beliefs that verifying them takes well over the second before progress shows.
    now = timezone.now()
    Belief.objects.bulk_create(
        Belief(user_id=f"owner-{n // 100}", key=f"key-{n}", state={"empty": True}, updated_at=now)
        for n in range(20000)
    )
    admin = make_client(channel="ops", perms=("read", "admin"))
    with celery_worker(settings, pool="prefork") as worker:
        started = admin.post("/jobs/verify_beliefs/runs").body
        path = f"/jobs/{started['id']}"
        moving = wait_until(lambda: admin.get(path).body, lambda run: run["done"] > 0, worker=worker)
        assert (moving["status"], moving["total"]) == ("running", 20000)
        [child] = pool_children(worker)
        os.kill(child, signal.SIGKILL)

        # The message is handed out again (acks_late, reject_on_worker_lost) to a new pool
        # process, which finds the run still moving as far as it can tell and leaves it.
        time.sleep(3)
        frozen = admin.get(path).body
        time.sleep(2)
        assert admin.get(path).body == frozen
        assert frozen["status"] == "running" and 0 < frozen["done"] < 20000
        assert worker.poll() is None

        # Ten minutes without a heartbeat, as if they had passed: the run is reported lost.
        JobRun.objects.filter(pk=started["id"]).update(
            heartbeat_at=F("heartbeat_at") - timedelta(minutes=10, seconds=1)
        )
        assert admin.get(path).body["status"] == "lost"
        assert [item["id"] for item in admin.get("/jobs?status=lost").body["items"]] == [started["id"]]
        assert admin.get("/jobs?status=running").body["total"] == 0

        # The next run proceeds normally on the same worker.
        nxt = admin.post("/jobs/expire_idempotency_keys/runs").body
        after = wait_until(lambda: admin.get(f"/jobs/{nxt['id']}").body, ended, worker=worker)
        assert (after["status"], after["counts"]) == ("succeeded", {"deleted": 0})
        assert admin.get(path).body["status"] == "lost"

        # Beat's sweep queues the lost run again and sends it; the worker finishes that same run
        # (over fewer beliefs by then, so that the second attempt is quick: it starts over).
        Belief.objects.exclude(user_id="owner-0").delete()
        assert job_sweep() == [started["id"]]
        run = wait_until(lambda: admin.get(path).body, ended, worker=worker)
    assert (run["status"], run["error"], run["done"], run["total"]) == ("succeeded", None, 100, 100)
    assert run["counts"] == {"checked": 100, "mismatched": 0, "mismatches": []}
    assert JobRun.objects.get(pk=started["id"]).attempts == 2

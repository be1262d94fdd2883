"""A tier change is rebuilt by a real Celery worker, through a real Redis broker."""

from __future__ import annotations

from unittest import mock

import pytest

from atlaso_site.job_runs.models import JobRun
from beliefs.selectors import belief_verdict
from beliefs.services import tier_update
from tests.celery_worker import celery_worker, wait_until
from tests.conftest import make_client

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.postgres,
    pytest.mark.redis,
]


def test_lowering_a_ceiling_is_rebuilt_by_the_worker_and_the_channel_stops_counting(settings):
    with celery_worker(settings) as worker:
        agent = make_client(channel="agent-worker", tier="agent_own")
        answer = agent.post("/users/alice/beliefs/diet:milk/observations", {"value": "oat milk"})
        assert answer.status == 201
        assert belief_verdict(user_id="alice", key="diet:milk").fact == "oat milk"

        # Were the run run in this process (eagerly), this would fail it: only the worker may run it.
        with mock.patch(
            "diagnostics.job_runner.job_execute", side_effect=AssertionError("ran in the test process")
        ):
            _, job = tier_update(name="agent_own", ceiling=0.4)
        assert job is not None and job.status == "queued"
        run = wait_until(
            lambda: JobRun.objects.get(pk=job.pk),
            lambda run: run.status in ("succeeded", "failed"),
            worker=worker,
        )
    assert (run.status, run.trigger, run.error) == ("succeeded", "tier_change", None)
    assert (run.total, run.done, run.counts["changed"]) == (1, 1, 1)
    verdict = belief_verdict(user_id="alice", key="diet:milk")
    assert verdict.fact is None and verdict.unknown_mass == 1.0

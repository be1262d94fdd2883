"""Job runs: recorded one way, claimed once, kept current while they run, reported lost or stalled."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.db import connections, transaction
from django.utils import timezone

from atlaso_site.lib.jobs import JobSkipped
from atlaso_site.lib.jobs.models import LOST, REPORTED_STATUSES, STALE_AFTER, STALLED, JobRun
from atlaso_site.lib.jobs.services import JobRecorder, job_claim, job_enqueue, job_record, set_dispatcher
from deposits.models import IdempotencyEntry
from diagnostics import jobs
from diagnostics.tasks import dispatch, run_scheduled_job

pytestmark = pytest.mark.django_db


def aged(run: JobRun, minutes: float, **fields) -> JobRun:
    """Move a run's timestamps `minutes` into the past, as if that long had gone by."""
    past = timezone.now() - timedelta(minutes=minutes)
    run = JobRun.objects.get(pk=run.pk)
    updates = {name: past for name in ("queued_at", "started_at", "heartbeat_at") if getattr(run, name)}
    JobRun.objects.filter(pk=run.pk).update(**updates, **fields)
    return JobRun.objects.get(pk=run.pk)


@pytest.fixture
def sent():
    """The run ids handed to the dispatcher; the real one is put back afterwards."""
    ids: list[str] = []
    set_dispatcher(ids.append)
    yield ids
    set_dispatcher(dispatch)


def test_a_run_is_sent_to_a_worker_only_once_its_transaction_commits(
    sent, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True) as callbacks, transaction.atomic():
        run = job_enqueue(name="verify_beliefs", trigger="api", params={"x": 1}, total=3)
        assert sent == []
    assert len(callbacks) == 1 and sent == [str(run.pk)]
    stored = JobRun.objects.get(pk=run.pk)
    assert (stored.status, stored.trigger, stored.params, stored.total, stored.done) == (
        "queued", "api", {"x": 1}, 3, 0,
    )  # fmt: skip
    assert stored.started_at is None and stored.counts == {} and stored.error is None


def test_a_run_recorded_in_a_transaction_that_rolls_back_is_neither_kept_nor_sent(
    sent, django_capture_on_commit_callbacks
):
    with (
        django_capture_on_commit_callbacks(execute=True),
        pytest.raises(RuntimeError),
        transaction.atomic(),
    ):
        job_enqueue(name="verify_beliefs", trigger="api")
        raise RuntimeError("the change failed")
    assert sent == [] and not JobRun.objects.exists()


def test_a_second_delivery_of_a_run_does_nothing():
    run = job_record(name="verify_beliefs", trigger="api")
    first = job_claim(run.pk)
    assert first is not None and first.run.status == "running"
    assert first.run.started_at == first.run.heartbeat_at
    assert job_claim(run.pk) is None
    assert jobs.job_execute(run.pk) is None
    assert JobRun.objects.get(pk=run.pk).status == "running"


def test_a_run_that_is_not_on_record_is_not_run():
    assert jobs.job_execute("00000000-0000-0000-0000-000000000000") is None


def test_progress_is_written_once_a_second_on_the_last_item_and_on_a_new_total():
    run = job_record(name="verify_beliefs", trigger="command")
    recorder = job_claim(run.pk)
    now = [100.0]
    recorder = JobRecorder(recorder.run, clock=lambda: now[0])

    def stored() -> tuple[int, int]:
        return tuple(JobRun.objects.values_list("done", "total").get(pk=run.pk))

    recorder.progress(0, 10)  # a new total: written at once
    assert stored() == (0, 10)
    now[0] += 0.5
    recorder.progress(3, 10)
    assert stored() == (0, 10)  # within the second: not yet
    before = JobRun.objects.get(pk=run.pk).heartbeat_at
    now[0] += 0.6
    recorder.progress(4, 10)
    assert stored() == (4, 10)
    assert JobRun.objects.get(pk=run.pk).heartbeat_at > before
    recorder.progress(10, 10)  # the last item, however soon
    assert stored() == (10, 10)
    finished = recorder.succeed({"checked": 10})
    assert (finished.status, finished.counts, finished.done) == ("succeeded", {"checked": 10}, 10)
    assert finished.finished_at >= finished.started_at


def test_a_job_that_raises_ends_failed_with_its_message_and_one_that_skips_ends_skipped(monkeypatch):
    def broken(params, progress):
        progress(1, 4)
        raise ValueError("the disk is full")

    def locked_out(params, progress):
        raise JobSkipped("another run holds the lock")

    monkeypatch.setitem(jobs.JOBS, "verify_beliefs", broken)
    failed = jobs.job_run_now(name="verify_beliefs", trigger="command")
    assert (failed.status, failed.error, failed.done, failed.total) == (
        "failed", "ValueError: the disk is full", 1, 4,
    )  # fmt: skip
    monkeypatch.setitem(jobs.JOBS, "verify_beliefs", locked_out)
    skipped = jobs.job_run_now(name="verify_beliefs", trigger="command")
    assert (skipped.status, skipped.counts, skipped.error) == (
        "skipped", {"reason": "another run holds the lock"}, None,
    )  # fmt: skip
    stored = {run.pk: run.status for run in JobRun.objects.all()}
    assert stored == {failed.pk: "failed", skipped.pk: "skipped"}


def test_a_run_of_a_job_this_version_does_not_know_fails_saying_so():
    run = job_record(name="retired_job", trigger="beat")
    ended = jobs.job_execute(run.pk)
    assert (ended.status, ended.error) == (
        "failed",
        "there is no job 'retired_job' in this version of Atlaso",
    )


def test_a_running_run_without_progress_for_ten_minutes_is_lost_and_a_queued_one_stalled():
    running = job_record(name="rebuild_beliefs", trigger="tier_change")
    job_claim(running.pk)
    queued = job_record(name="verify_beliefs", trigger="api")
    assert (aged(running, 9).reported_status, aged(queued, 9).reported_status) == ("running", "queued")
    assert (aged(running, 11).reported_status, aged(queued, 11).reported_status) == (LOST, STALLED)
    # A run that ended long ago keeps the status it ended with.
    done = job_record(name="verify_beliefs", trigger="beat")
    job_claim(done.pk).succeed({})
    assert aged(done, 60 * 24).reported_status == "succeeded"


def test_the_status_filter_and_the_reported_status_are_one_rule():
    now = timezone.now()
    ages = (None, STALE_AFTER - timedelta(seconds=1), STALE_AFTER + timedelta(seconds=1))
    runs = []
    for status, queued_age, heartbeat_age in itertools.product(
        ("queued", "running", "succeeded", "failed", "skipped"), ages[1:], ages
    ):
        run = JobRun.objects.create(
            name="verify_beliefs",
            trigger="api",
            status=status,
            queued_at=now - queued_age,
            started_at=None if status == "queued" else now - queued_age,
            heartbeat_at=None if heartbeat_age is None else now - heartbeat_age,
        )
        runs.append(run)
    by_filter = {
        status: set(JobRun.objects.reported(status, now=now).values_list("pk", flat=True))
        for status in REPORTED_STATUSES
    }
    for run in runs:
        expected = run.reported_status_at(now)
        assert [s for s, pks in by_filter.items() if run.pk in pks] == [expected], run
    assert by_filter[LOST] and by_filter[STALLED]


def test_beat_records_a_run_with_trigger_beat_and_runs_it():
    IdempotencyEntry.objects.create(
        user_id="alice", key="ak_1", payload_hash="x", created_at=timezone.now() - timedelta(days=2)
    )
    assert run_scheduled_job("expire_idempotency_keys") == "succeeded"
    run = JobRun.objects.get()
    assert (run.name, run.trigger, run.counts, run.done, run.total) == (
        "expire_idempotency_keys", "beat", {"deleted": 1}, 1, 1,
    )  # fmt: skip
    assert not IdempotencyEntry.objects.exists()


def test_beat_runs_the_three_periodic_jobs_through_the_runner():
    schedule = {
        entry["args"][0]: (entry["task"], entry["schedule"])
        for entry in django_settings.CELERY_BEAT_SCHEDULE.values()
    }
    assert schedule == {
        "recompute_diagnostics": (
            "diagnostics.tasks.run_scheduled_job",
            django_settings.FMI_SNAPSHOT_MINUTES * 60.0,
        ),
        "expire_idempotency_keys": ("diagnostics.tasks.run_scheduled_job", 3600.0),
        "verify_beliefs": ("diagnostics.tasks.run_scheduled_job", 86400.0),
    }
    assert set(schedule) <= set(jobs.JOBS)


def test_the_run_task_is_acknowledged_late_and_requeued_when_its_worker_is_lost():
    from diagnostics.tasks import run_job

    assert (run_job.acks_late, run_job.reject_on_worker_lost) == (True, True)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_progress_made_inside_a_jobs_own_transaction_is_seen_by_other_connections(on_postgres, monkeypatch):
    seen: list[tuple[int, int]] = []

    def watch(run_id) -> tuple[int, int]:
        other = connections.create_connection("default")
        try:
            with other.cursor() as cursor:
                cursor.execute("SELECT done, total FROM jobs_jobrun WHERE id = %s", [run_id])
                return cursor.fetchone()
        finally:
            other.close()

    def in_one_transaction(params, progress):
        with transaction.atomic():
            progress(5, 5)
            seen.append(watch(params["me"]))
        return {"done": 5}

    monkeypatch.setitem(jobs.JOBS, "verify_beliefs", in_one_transaction)
    run = job_record(name="verify_beliefs", trigger="command")
    JobRun.objects.filter(pk=run.pk).update(params={"me": str(run.pk)})
    ended = jobs.job_execute(run.pk)
    assert ended.status == "succeeded", ended.error
    assert seen == [(5, 5)]
    # The second connection is closed and forgotten with the run.
    assert not hasattr(connections._connections, f"job-progress-{run.pk}")

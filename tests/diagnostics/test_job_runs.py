"""Job runs: recorded, claimed once, kept current, reported lost or stalled, and sent again.

Recorded one way, claimed once, kept current while they run, reported lost or stalled, and sent
again by the sweep until they finish.
"""

from __future__ import annotations

import itertools
import threading
import time
from datetime import timedelta
from unittest import mock

import pytest
from django.conf import settings as django_settings
from django.db import connections, transaction
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerDown

from atlaso_site.job_runs import JobSkipped
from atlaso_site.job_runs.models import (
    LOST,
    REPORTED_STATUSES,
    STALLED,
    JobRun,
    beat_lost_after,
    heartbeat_every,
    lost_after,
    stalled_after,
)
from atlaso_site.job_runs.services import (
    SEND_GRACE,
    JobRecorder,
    job_claim,
    job_claim_or_watch,
    job_enqueue,
    job_record,
    job_send,
    job_sweep,
    set_dispatcher,
)
from beliefs.services import beliefs_verify
from deposits.models import IdempotencyEntry
from diagnostics import job_runner
from diagnostics.tasks import dispatch, run_scheduled_job
from tests.beliefs.helpers import OLD, observe, verdict
from tests.conftest import make_client

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
    assert job_runner.job_execute(run.pk) is None
    assert JobRun.objects.get(pk=run.pk).status == "running"


def test_a_run_that_is_not_on_record_is_not_run():
    assert job_runner.job_execute("00000000-0000-0000-0000-000000000000") is None


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

    monkeypatch.setitem(job_runner.JOBS, "verify_beliefs", broken)
    failed = job_runner.job_run_now(name="verify_beliefs", trigger="command")
    assert (failed.status, failed.error, failed.done, failed.total) == (
        "failed", "ValueError: the disk is full", 1, 4,
    )  # fmt: skip
    monkeypatch.setitem(job_runner.JOBS, "verify_beliefs", locked_out)
    skipped = job_runner.job_run_now(name="verify_beliefs", trigger="command")
    assert (skipped.status, skipped.counts, skipped.error) == (
        "skipped", {"reason": "another run holds the lock"}, None,
    )  # fmt: skip
    stored = {run.pk: run.status for run in JobRun.objects.all()}
    assert stored == {failed.pk: "failed", skipped.pk: "skipped"}


def test_a_run_of_a_job_this_version_does_not_know_fails_saying_so():
    run = job_record(name="retired_job", trigger="beat")
    ended = job_runner.job_execute(run.pk)
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
    # Both thresholds default to ten minutes (set apart in test_the_lost_and_stalled_thresholds_are_settings).
    assert lost_after() == stalled_after() == timedelta(minutes=10)
    ages = (None, lost_after() - timedelta(seconds=1), lost_after() + timedelta(seconds=1))
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


def test_beat_runs_the_three_periodic_jobs_through_the_runner_and_sweeps_every_minute():
    entries = dict(django_settings.CELERY_BEAT_SCHEDULE)
    sweep = entries.pop("sweep-job-runs")
    assert (sweep["task"], sweep["schedule"]) == ("diagnostics.tasks.sweep_job_runs", 60.0)
    # The embedding job's sweep records a run only when a deposit has waited too long.
    embeddings = entries.pop("sweep-embeddings")
    assert (embeddings["task"], embeddings["schedule"]) == ("diagnostics.tasks.sweep_embeddings", 60.0)
    schedule = {entry["args"][0]: (entry["task"], entry["schedule"]) for entry in entries.values()}
    assert schedule == {
        "recompute_diagnostics": (
            "diagnostics.tasks.run_scheduled_job",
            django_settings.FMI_SNAPSHOT_MINUTES * 60.0,
        ),
        "expire_idempotency_keys": ("diagnostics.tasks.run_scheduled_job", 3600.0),
        "verify_beliefs": ("diagnostics.tasks.run_scheduled_job", 86400.0),
    }
    assert set(schedule) <= set(job_runner.JOBS)


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

    monkeypatch.setitem(job_runner.JOBS, "verify_beliefs", in_one_transaction)
    run = job_record(name="verify_beliefs", trigger="command")
    JobRun.objects.filter(pk=run.pk).update(params={"me": str(run.pk)})
    ended = job_runner.job_execute(run.pk)
    assert ended.status == "succeeded", ended.error
    assert seen == [(5, 5)]
    # The second connection is closed and forgotten with the run.
    assert not hasattr(connections._connections, f"job-progress-{run.pk}")


def refused(run_id: str) -> None:
    """A dispatcher whose broker is down, as kombu reports it."""
    raise BrokerDown("Error 111 connecting to 127.0.0.1:6379. Connection refused.")


def test_a_tier_change_with_the_broker_down_answers_200_and_the_sweep_sends_its_rebuild(
    settings, django_capture_on_commit_callbacks
):
    agent = make_client()
    admin = make_client(channel="ops", tier="untrusted", perms=("read", "admin"))
    observe(agent, OLD)
    with (
        mock.patch("diagnostics.tasks.run_job.delay", side_effect=refused) as delay,
        django_capture_on_commit_callbacks(execute=True),
    ):
        answer = admin.call("PUT", "/tiers/agent_own", {"ceiling": 0.4})
    assert delay.call_count == 1
    # Committed: the answer says so, and names the run that will apply it.
    assert answer.status == 200, answer.body
    rebuild = answer.body["rebuild"]
    assert (rebuild["status"], rebuild["total"], rebuild["done"]) == ("queued", 1, 0)
    run = JobRun.objects.get(pk=rebuild["id"])
    assert (run.status, run.sent_at) == ("queued", None)
    assert verdict(agent)["fact"] == OLD  # not rebuilt yet

    # The broker is back: the next sweep sends the run, and the worker's delivery finishes it.
    sent: list[str] = []
    set_dispatcher(sent.append)
    try:
        assert job_sweep(now=timezone.now() + SEND_GRACE + timedelta(seconds=1)) == [rebuild["id"]]
    finally:
        set_dispatcher(dispatch)
    assert sent == [rebuild["id"]]
    assert JobRun.objects.get(pk=rebuild["id"]).sent_at is not None
    finished = job_runner.job_execute(sent[0])
    assert (str(finished.pk), finished.status, finished.attempts) == (rebuild["id"], "succeeded", 1)
    assert verdict(agent)["fact"] is None  # agent_own at 0.4 is below the pivot
    assert beliefs_verify()["mismatched"] == 0


def test_a_run_the_broker_refused_is_sent_by_the_sweep_once_the_grace_has_passed(
    sent, django_capture_on_commit_callbacks
):
    set_dispatcher(refused)
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        run = job_enqueue(name="verify_beliefs", trigger="api")
    assert job_send(run.pk) is False  # logged, never raised into the caller
    set_dispatcher(sent.append)
    now = timezone.now()
    assert job_sweep(now=now) == []  # within the grace: the send after the commit may still be under way
    assert job_sweep(now=now + SEND_GRACE + timedelta(seconds=1)) == [str(run.pk)]
    # Sent now: not again at the next sweep, only once it has waited the stalled period.
    assert job_sweep(now=now + SEND_GRACE + timedelta(seconds=2)) == []
    assert job_sweep(now=now + stalled_after() + timedelta(minutes=1)) == [str(run.pk)]
    assert sent == [str(run.pk)] * 2


def test_the_sweep_leaves_alone_runs_that_are_moving_or_ended_and_runs_run_here(sent):
    long_ago = timezone.now() - timedelta(days=1)
    moving = job_record(name="verify_beliefs", trigger="api")
    job_claim(moving.pk)
    ended = job_record(name="verify_beliefs", trigger="api")
    job_claim(ended.pk).succeed({})
    JobRun.objects.filter(pk=ended.pk).update(queued_at=long_ago, started_at=long_ago, heartbeat_at=long_ago)
    # A command's run, claimed as soon as it is recorded, never goes to a worker.
    job_runner.job_run_now(name="expire_idempotency_keys", trigger="command")
    assert job_sweep(now=timezone.now() + SEND_GRACE + timedelta(seconds=1)) == []
    assert sent == []


def test_a_run_whose_worker_died_is_queued_again_by_the_sweep_and_finishes_with_the_same_id(sent):
    run = job_record(name="verify_beliefs", trigger="api")
    first = job_claim(run.pk)
    first.progress(0, 10)
    first.progress(10, 10)  # then the worker was killed, before the run ended
    assert job_sweep() == []  # still moving, as far as anyone can tell
    stopped = timezone.now() - lost_after() - timedelta(seconds=1)
    JobRun.objects.filter(pk=run.pk).update(heartbeat_at=stopped)
    assert JobRun.objects.get(pk=run.pk).reported_status == LOST

    assert job_sweep() == [str(run.pk)]
    assert sent == [str(run.pk)]
    again = JobRun.objects.get(pk=run.pk)
    # Queued again, waiting from now (not stalled at once), its progress back to zero.
    assert (again.reported_status, again.done, again.total, again.started_at) == ("queued", 0, 10, None)
    assert again.attempts == 1

    finished = job_runner.job_execute(sent[0])
    assert (finished.pk, finished.status, finished.attempts) == (run.pk, "succeeded", 2)
    assert finished.counts == {"checked": 0, "mismatched": 0, "mismatches": []}
    assert job_runner.job_execute(sent[0]) is None  # the dead worker's message, if it ever comes back


def test_a_queued_again_run_that_no_worker_takes_is_reported_stalled_from_when_it_was_queued_again(sent):
    run = job_record(name="verify_beliefs", trigger="api")
    job_claim(run.pk)
    JobRun.objects.filter(pk=run.pk).update(
        queued_at=timezone.now() - timedelta(hours=2), heartbeat_at=timezone.now() - timedelta(hours=1)
    )
    job_sweep()
    requeued = JobRun.objects.get(pk=run.pk)
    assert requeued.reported_status == "queued"
    assert requeued.reported_status_at(timezone.now() + stalled_after() + timedelta(seconds=1)) == STALLED


def test_a_delivery_takes_a_lost_run_but_not_one_still_moving_elsewhere():
    run = job_record(name="verify_beliefs", trigger="api")
    first = job_claim(run.pk)
    first.progress(1, 4)
    assert job_claim(run.pk) is None  # a redelivery while it moves does nothing
    JobRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - lost_after() - timedelta(seconds=1))
    second = job_claim(run.pk)
    assert second is not None and second.run.attempts == 2
    assert job_claim(run.pk) is None  # and only one delivery takes it


def test_a_first_attempt_that_was_only_slow_writes_nothing_over_the_one_that_took_its_run():
    run = job_record(name="verify_beliefs", trigger="api")
    slow = job_claim(run.pk)
    JobRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - lost_after() - timedelta(seconds=1))
    taken = job_claim(run.pk)
    taken.progress(2, 8)
    slow.progress(7, 7)
    slow.fail("RuntimeError: gave up")
    stored = JobRun.objects.get(pk=run.pk)
    assert (stored.status, stored.done, stored.total, stored.error) == ("running", 2, 8, None)
    assert taken.succeed({"checked": 8}).status == "succeeded"
    assert JobRun.objects.get(pk=run.pk).status == "succeeded"


def test_the_lost_and_stalled_thresholds_are_settings(settings, sent):
    settings.JOB_LOST_AFTER_SECONDS = 30
    settings.JOB_STALLED_AFTER_SECONDS = 120
    run = job_record(name="verify_beliefs", trigger="api")
    job_claim(run.pk)
    now = timezone.now()
    assert JobRun.objects.get(pk=run.pk).reported_status_at(now + timedelta(seconds=31)) == LOST
    assert job_sweep(now=now + timedelta(seconds=31)) == [str(run.pk)]
    assert JobRun.objects.get(pk=run.pk).reported_status_at(now + timedelta(seconds=152)) == STALLED


def beating(run: JobRun, *, seconds_ago: float) -> JobRun:
    """A claimed run whose worker's last heartbeat was `seconds_ago`, its progress ten minutes old."""
    claimed = job_claim(run.pk)
    assert claimed is not None
    aged(run, 11)
    JobRun.objects.filter(pk=run.pk).update(alive_at=timezone.now() - timedelta(seconds=seconds_ago))
    return JobRun.objects.get(pk=run.pk)


def test_a_run_with_a_heartbeat_is_lost_when_it_stops_beating_whatever_its_progress():
    assert beat_lost_after() == timedelta(seconds=30) and heartbeat_every() == 5
    alive = beating(job_record(name="rebuild_beliefs", trigger="api"), seconds_ago=29)
    dead = beating(job_record(name="rebuild_beliefs", trigger="api"), seconds_ago=31)
    # Progress ten minutes old does not make a beating run lost; a stopped heartbeat does.
    assert (alive.reported_status, dead.reported_status) == ("running", LOST)
    now = timezone.now()
    assert set(JobRun.objects.reported(LOST, now=now)) == {dead}
    assert set(JobRun.objects.reported("running", now=now)) == {alive}


def test_the_sweep_queues_again_a_run_whose_heartbeat_stopped_and_its_next_claim_beats_afresh(sent):
    run = beating(job_record(name="verify_beliefs", trigger="api"), seconds_ago=31)
    assert job_sweep() == [str(run.pk)]
    again = JobRun.objects.get(pk=run.pk)
    assert (again.status, again.alive_at) == ("queued", None)
    # Claimed inside a transaction (this test's), nobody else could see a beat: there is none.
    assert job_claim(run.pk).run.alive_at is None


def test_a_delivery_of_a_run_beating_elsewhere_watches_it_and_leaves_it_at_its_next_beat():
    run = beating(job_record(name="verify_beliefs", trigger="api"), seconds_ago=1)
    naps: list[float] = []

    def beat_meanwhile(seconds: float) -> None:
        naps.append(seconds)
        JobRun.objects.filter(pk=run.pk).update(alive_at=timezone.now())

    assert job_claim_or_watch(run.pk, sleep=beat_meanwhile) is None
    assert naps == [1.0]
    assert JobRun.objects.get(pk=run.pk).attempts == 1


def test_a_delivery_of_a_run_whose_heartbeat_stopped_takes_it_once_it_is_lost(settings):
    settings.JOB_HEARTBEAT_LOST_AFTER_SECONDS = 1.5  # beats every 0.5 s
    run = beating(job_record(name="verify_beliefs", trigger="api"), seconds_ago=0)
    # The dead pool process's message, handed out again at once: not lost yet, so it watches.
    assert job_claim(run.pk) is None
    taken = job_claim_or_watch(run.pk)
    assert taken is not None and taken.run.attempts == 2
    assert taken.run.status == "running"


def test_a_delivery_of_a_run_nobody_beats_for_or_that_ended_does_not_wait():
    run = job_record(name="verify_beliefs", trigger="api")
    job_claim(run.pk)  # in this test's transaction: no heartbeat
    never = mock.Mock(side_effect=AssertionError("waited"))
    assert job_claim_or_watch(run.pk, sleep=never) is None
    job_claim(job_record(name="verify_beliefs", trigger="api").pk)
    ended = job_record(name="verify_beliefs", trigger="api")
    JobRun.objects.filter(pk=ended.pk).update(status="succeeded", alive_at=timezone.now())
    assert job_claim_or_watch(ended.pk, sleep=never) is None


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_running_job_beats_without_progress_and_stops_beating_when_it_ends(
    on_postgres, monkeypatch, settings
):
    settings.JOB_HEARTBEAT_SECONDS = 0.1
    beats: list[object] = []

    def silent_for_a_while(params, progress):
        first = JobRun.objects.get(pk=params["me"]).alive_at
        time.sleep(0.5)  # no progress reported meanwhile
        beats.extend([first, JobRun.objects.get(pk=params["me"]).alive_at])
        return {}

    monkeypatch.setitem(job_runner.JOBS, "verify_beliefs", silent_for_a_while)
    run = job_record(name="verify_beliefs", trigger="command", params={})
    JobRun.objects.filter(pk=run.pk).update(params={"me": str(run.pk)})
    ended = job_runner.job_execute(run.pk)
    assert ended.status == "succeeded", ended.error
    first, later = beats
    assert first is not None and later > first
    stopped = JobRun.objects.get(pk=run.pk).alive_at
    time.sleep(0.3)
    assert JobRun.objects.get(pk=run.pk).alive_at == stopped
    assert not [t for t in threading.enumerate() if t.name.startswith("job-heartbeat-")]

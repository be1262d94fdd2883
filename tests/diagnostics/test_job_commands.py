"""The job commands: each runs its job here, records a run with trigger `command`, sums it up in one line."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from unittest import mock

import pytest
from django.core.management import call_command, execute_from_command_line
from django.core.management.base import CommandError
from django.db import connection, connections
from django.utils import timezone

from atlaso_site.job_runs.models import JobRun
from beliefs.models import Belief
from deposits.models import IdempotencyEntry
from diagnostics import job_runner
from diagnostics.models import Snapshot
from diagnostics.services import LOCK_KEY
from tests.beliefs.helpers import KEY, OLD, observe
from tests.conftest import make_client
from tests.deposits.scenario import put

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(db):
    return make_client(channel="owner-app", tier="user_direct")


def run(command: str, *args: str) -> tuple[str, JobRun]:
    out = StringIO()
    call_command(command, *args, stdout=out)
    return out.getvalue(), JobRun.objects.get()


def test_expire_idempotency_keys_deletes_expired_entries_and_says_how_many():
    old = timezone.now() - timedelta(hours=25)
    for key in ("ak_1", "ak_2"):
        IdempotencyEntry.objects.create(user_id="alice", key=key, payload_hash="x", created_at=old)
    IdempotencyEntry.objects.create(user_id="alice", key="ak_3", payload_hash="x", created_at=timezone.now())
    printed, job = run("expire_idempotency_keys")
    assert (job.name, job.trigger, job.status, job.counts) == (
        "expire_idempotency_keys", "command", "succeeded", {"deleted": 2},
    )  # fmt: skip
    assert (job.done, job.total) == (2, 2)
    assert job.queued_at <= job.started_at <= job.finished_at
    assert printed.startswith("expire_idempotency_keys succeeded in ")
    assert printed.rstrip().endswith(f": deleted 2 (run {job.pk})")
    assert len(printed.splitlines()) == 1
    assert list(IdempotencyEntry.objects.values_list("key", flat=True)) == ["ak_3"]


def test_rebuild_beliefs_records_its_channels_and_its_counts(api, owner):
    observe(api, OLD)
    observe(owner, "oat", user="bob", key="diet:milk")
    printed, job = run("rebuild_beliefs", "--channel", "agent-a")
    assert (job.name, job.trigger, job.status, job.params) == (
        "rebuild_beliefs", "command", "succeeded", {"channels": ["agent-a"]},
    )  # fmt: skip
    assert (job.counts, job.done, job.total) == ({"beliefs": 1, "rebuilt": 1, "changed": 0}, 1, 1)
    assert ": beliefs 1, rebuilt 1, changed 0 (run " in printed


def test_rebuild_beliefs_without_a_channel_rebuilds_every_belief(api, owner):
    observe(api, OLD)
    observe(owner, "oat", user="bob", key="diet:milk")
    _, job = run("rebuild_beliefs")
    assert (job.params, job.counts["beliefs"]) == ({"channels": None}, 2)


def test_verify_beliefs_that_finds_a_mismatch_succeeds_lists_it_and_exits_1(api, capsys):
    observe(api, OLD)
    observe(api, OLD, user="bob")
    Belief.objects.filter(user_id="alice").update(state={"empty": True}, fact="tampered")
    # As manage.py runs it; closing connections at exit would end the test's transaction.
    with pytest.raises(SystemExit) as exited, mock.patch.object(connections, "close_all"):
        execute_from_command_line(["manage.py", "verify_beliefs"])
    assert exited.value.code == 1
    job = JobRun.objects.get()
    assert (job.name, job.trigger, job.status) == ("verify_beliefs", "command", "succeeded")
    assert job.counts == {"checked": 2, "mismatched": 1, "mismatches": [["alice", KEY]]}
    printed = capsys.readouterr()
    assert ": checked 2, mismatched 1 (run " in printed.out
    assert f"DIFFERS alice {KEY}" in printed.out
    assert "1 belief(s) differ from their log; run rebuild_beliefs" in printed.err


def test_verify_beliefs_with_nothing_wrong_exits_0(api):
    observe(api, OLD)
    printed, job = run("verify_beliefs")
    assert job.counts == {"checked": 1, "mismatched": 0, "mismatches": []}
    assert ": checked 1, mismatched 0 (run " in printed and "DIFFERS" not in printed


def test_recompute_diagnostics_snapshots_the_owners_and_all_snapshots_every_owner():
    put("positive", "alpha holds", user="alice")
    printed, job = run("recompute_diagnostics")
    assert (job.name, job.trigger, job.status, job.params) == (
        "recompute_diagnostics", "command", "succeeded", {"all_owners": False},
    )  # fmt: skip
    assert (job.counts["owners"], job.counts["snapshots"]) == (1, 2)
    assert ": owners 1, snapshots 2" in printed
    JobRun.objects.all().delete()
    _, quiet = run("recompute_diagnostics")
    assert quiet.counts["owners"] == 0
    JobRun.objects.all().delete()
    _, every = run("recompute_diagnostics", "--all")
    assert (every.params, every.counts["owners"]) == ({"all_owners": True}, 1)
    assert Snapshot.objects.filter(user_id="alice").count() == 2


def test_a_command_whose_run_failed_exits_1_with_the_error(monkeypatch):
    def broken(params, progress):
        raise RuntimeError("the broker is gone")

    monkeypatch.setitem(job_runner.JOBS, "expire_idempotency_keys", broken)
    out = StringIO()
    with pytest.raises(
        CommandError, match="expire_idempotency_keys failed: RuntimeError: the broker is gone"
    ) as error:
        call_command("expire_idempotency_keys", stdout=out)
    assert error.value.returncode == 1
    job = JobRun.objects.get()
    assert (job.trigger, job.status, job.error) == ("command", "failed", "RuntimeError: the broker is gone")
    assert "expire_idempotency_keys failed" in out.getvalue()


@pytest.mark.postgres
def test_recompute_diagnostics_while_another_run_holds_the_lock_is_skipped_and_exits_0(on_postgres):
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [LOCK_KEY])
        printed, job = run("recompute_diagnostics")
    finally:
        other.close()
    assert connection.vendor == "postgresql"
    assert (job.status, job.trigger) == ("skipped", "command")
    assert "holds the lock" in job.counts["reason"]
    assert printed.startswith("recompute_diagnostics skipped in ")
    assert "holds the lock" in printed
    assert not Snapshot.objects.exists()

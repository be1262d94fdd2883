"""Migration beliefs 0006: every RebuildJob becomes a rebuild_beliefs job run, then the table goes."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

BEFORE = [("beliefs", "0005_dashboard_roles"), ("jobs", "0001_initial")]
AFTER = [("beliefs", "0006_job_runs")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return MigrationExecutor(connection).loader.project_state(targets).apps


def test_rebuild_jobs_are_copied_into_job_runs_with_their_status_and_trigger():
    old = migrate(BEFORE)
    try:
        RebuildJob = old.get_model("beliefs", "RebuildJob")
        created = timezone.now() - timedelta(days=3)
        rows = [
            ("tier agent_own ceiling set to 0.4", ["agent-a"], "done", "", 2, 2, 1),
            ("channel web rebound to tier untrusted", ["web"], "failed", "boom", 5, 3, 0),
            ("rebuild_beliefs by hand", ["*"], "pending", "", 7, 0, 0),
            ("channel x rebound to tier agent_own", ["x"], "running", "", 4, 1, 1),
        ]
        for reason, channels, status, error, total, done, changed in rows:
            job = RebuildJob.objects.create(
                reason=reason, channels=channels, status=status, error=error, total=total, done=done,
                changed=changed, started_at=None if status == "pending" else created,
                finished_at=created if status in ("done", "failed") else None,
            )  # fmt: skip
            RebuildJob.objects.filter(pk=job.pk).update(created_at=created)
        new = migrate(AFTER)
        JobRun = new.get_model("jobs", "JobRun")
        runs = {run.params["reason"]: run for run in JobRun.objects.filter(name="rebuild_beliefs")}
        assert {reason: (run.trigger, run.status) for reason, run in runs.items()} == {
            "tier agent_own ceiling set to 0.4": ("tier_change", "succeeded"),
            "channel web rebound to tier untrusted": ("channel_change", "failed"),
            "rebuild_beliefs by hand": ("command", "queued"),
            "channel x rebound to tier agent_own": ("channel_change", "running"),
        }
        tier = runs["tier agent_own ceiling set to 0.4"]
        assert (tier.params["channels"], tier.total, tier.done, tier.error) == (["agent-a"], 2, 2, None)
        assert tier.counts == {"beliefs": 2, "rebuilt": 2, "changed": 1}
        assert tier.queued_at == created and tier.finished_at == created
        assert runs["channel web rebound to tier untrusted"].error == "boom"
        assert runs["rebuild_beliefs by hand"].params["channels"] is None
        assert "beliefs_rebuildjob" not in connection.introspection.table_names()

        # And back: the runs become rebuild jobs again.
        old = migrate(BEFORE)
        back = old.get_model("beliefs", "RebuildJob")
        assert sorted(back.objects.values_list("reason", "status", "channels")) == sorted(
            (reason, status, channels) for reason, channels, status, *_ in rows
        )
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())

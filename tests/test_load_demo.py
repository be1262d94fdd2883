"""`load_demo` (run by `make run`): every dashboard page has something to show, and twice changes nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db.models import Max, Min

from atlaso_site.job_runs.models import JobRun
from beliefs.models import BeliefRevision
from beliefs.selectors import belief_verdict
from deposits.models import ConflictEpisode, Contradiction, Deposit
from diagnostics.models import Snapshot

pytestmark = pytest.mark.django_db


def _counts() -> tuple[int, ...]:
    return (
        Deposit.objects.count(),
        Contradiction.objects.count(),
        BeliefRevision.objects.count(),
        Snapshot.objects.count(),
        JobRun.objects.count(),
        ConflictEpisode.objects.count(),
    )


def test_loading_the_demo_twice_changes_nothing_and_it_has_a_conflict_a_correction_and_a_belief():
    call_command("load_demo")
    counts = _counts()
    call_command("load_demo")
    assert _counts() == counts
    assert counts[1] >= 1
    verdict = belief_verdict(user_id="alice", key="diet:milk")
    assert (
        verdict.fact == "soy milk"
        and verdict.superseded == ("oat milk",)
        and verdict.inert == ("whole milk",)
    )


def test_some_conflicts_are_open_and_some_resolved_by_a_reviewer():
    call_command("load_demo")
    episodes = ConflictEpisode.objects.all()
    assert episodes.filter(ended_at__isnull=True).values("user_id").distinct().count() >= 2
    assert episodes.filter(ended_at__isnull=False).values("user_id").distinct().count() >= 2
    assert Deposit.objects.filter(author="demo-reviewer", author_role="reviewer").count() >= 1


def test_a_week_of_snapshots_gives_every_demo_owner_and_the_deployment_a_trend():
    call_command("load_demo")
    for user_id in ("alice", "ops-team", "tenant-a:bob", "support-bot", None):
        rows = Snapshot.objects.filter(user_id=user_id)
        span = rows.aggregate(first=Min("taken_at"), last=Max("taken_at"))
        assert span["last"] - span["first"] >= timedelta(days=6, hours=23)
        assert rows.filter(is_latest=True).count() == 1
        assert rows.values("fmi").distinct().count() > 1  # a shape, not a flat line
        assert all(0 <= fmi <= 100 for fmi in rows.values_list("fmi", flat=True))


def test_the_jobs_ran_through_the_runner_as_commands():
    call_command("load_demo")
    runs = {run.name: run for run in JobRun.objects.all()}
    assert {"recompute_diagnostics", "verify_beliefs", "expire_idempotency_keys"} <= set(runs)
    assert {run.trigger for run in runs.values()} == {"command"}
    assert {run.status for run in runs.values()} == {"succeeded"}

"""The recompute_diagnostics job: who is snapshotted, what a snapshot holds, retention, overlap."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.utils import timezone

from deposits.selectors.recall import recall
from deposits.services.deposits import recall_record
from diagnostics.models import Snapshot
from diagnostics.selectors import health
from diagnostics.services import LOCK_KEY, diagnostics_recompute, snapshots_thin
from tests.deposits.scenario import NARROW, correct, put, put_many, retract
from tests.deposits.scenario import claim as body

pytestmark = pytest.mark.django_db


def snapshots_of(user_id: str) -> int:
    return Snapshot.objects.filter(user_id=user_id).count()


def test_every_owner_gets_a_first_snapshot_then_only_owners_with_activity():
    put("positive", "alpha holds", user="alice")
    put("positive", "bravo holds", user="bob")
    first = diagnostics_recompute()
    assert (first["owners"], snapshots_of("alice"), snapshots_of("bob")) == (2, 1, 1)
    put("negative", "alpha fails", user="alice")
    second = diagnostics_recompute()
    assert (second["owners"], snapshots_of("alice"), snapshots_of("bob")) == (1, 2, 1)


def test_an_owner_with_no_activity_gets_no_new_snapshot():
    put("positive", "alpha holds", user="alice")
    diagnostics_recompute()
    assert diagnostics_recompute()["owners"] == 0
    assert snapshots_of("alice") == 1
    # The deployment is snapshotted on every run.
    assert Snapshot.objects.filter(user_id__isnull=True).count() == 2


@pytest.mark.parametrize("activity", ["recall", "bulk write", "retraction", "supersession"])
def test_each_kind_of_activity_brings_a_new_snapshot(activity):
    first = put("positive", "alpha holds", user="alice")
    diagnostics_recompute()
    if activity == "recall":
        recall_record(user_id="alice", results=recall(user_id="alice", query="alpha"))
    elif activity == "bulk write":
        put_many([body("positive", "alpha again")], user="alice")
    elif activity == "retraction":
        retract(first, user="alice")
    else:
        correct([first], "alpha holds better", user="alice")
    assert diagnostics_recompute()["owners"] == 1
    assert snapshots_of("alice") == 2


def test_a_snapshot_holds_the_fmi_and_the_counts_behind_it():
    put("positive", "alpha holds")
    put("positive", "alpha holds again")
    put("positive", "bravo holds", {**NARROW, "env": "b"})
    put("negative", "bravo fails", {**NARROW, "env": "b"})
    recall_record(user_id="alice", results=recall(user_id="alice", query="alpha"))
    diagnostics_recompute()
    snapshot = Snapshot.objects.get(user_id="alice")
    now = health(user_id="alice")
    assert (snapshot.fmi, snapshot.coverage, snapshot.precision) == (now.fmi, 1.0, pytest.approx(0.75))
    assert (snapshot.deposit_count, snapshot.bag_count, snapshot.conflict_bag_count) == (4, 2, 1)
    assert (snapshot.recall_count, snapshot.window_days, snapshot.is_latest) == (1, 30, True)


def test_the_deployment_pools_every_owners_bags_rather_than_averaging_them():
    # alice: one agreeing bag (agreement 1); bob: three split bags (agreement 1/2 each).
    put("positive", "alpha holds", user="alice")
    put("positive", "alpha holds again", user="alice")
    for env in ("a", "b", "c"):
        put("positive", "bravo holds", {**NARROW, "env": env}, user="bob")
        put("negative", "bravo fails", {**NARROW, "env": env}, user="bob")
    diagnostics_recompute()
    deployment = Snapshot.objects.get(user_id__isnull=True)
    assert deployment.precision == pytest.approx((1 + 3 * 0.5) / 4)  # pooled, not (1 + 0.5) / 2
    assert (deployment.owner_count, deployment.bag_count, deployment.conflict_bag_count) == (2, 4, 3)
    assert deployment.deposit_count == 8


def test_the_newest_snapshot_of_each_owner_is_its_latest():
    put("positive", "alpha holds")
    diagnostics_recompute()
    put("positive", "alpha holds again")
    diagnostics_recompute()
    latest = Snapshot.objects.filter(user_id="alice", is_latest=True)
    assert latest.count() == 1
    assert latest.get().deposit_count == 2


def test_snapshots_older_than_90_days_are_thinned_to_one_per_owner_per_day():
    now = timezone.now()
    old_day = (now - timedelta(days=120)).replace(hour=12, minute=0)
    recent = now - timedelta(days=10)
    for minutes in (0, 15, 30):
        for user_id in ("alice", None):
            Snapshot.objects.create(
                user_id=user_id, taken_at=old_day + timedelta(minutes=minutes), window_days=30, fmi=50,
                coverage=0.5, precision=0.5, resolution=0.5, density=0.5, deposit_count=1, bag_count=1,
                conflict_bag_count=0, uncertain_belief_count=0, recall_count=0, is_latest=False,
            )  # fmt: skip
            Snapshot.objects.create(
                user_id=user_id, taken_at=recent + timedelta(minutes=minutes), window_days=30, fmi=50,
                coverage=0.5, precision=0.5, resolution=0.5, density=0.5, deposit_count=1, bag_count=1,
                conflict_bag_count=0, uncertain_belief_count=0, recall_count=0, is_latest=minutes == 30,
            )  # fmt: skip
    assert snapshots_thin(now=now) == 4
    kept_old = Snapshot.objects.filter(taken_at__lt=now - timedelta(days=90))
    assert sorted((s.user_id or "", s.taken_at) for s in kept_old) == [
        ("", old_day + timedelta(minutes=30)),
        ("alice", old_day + timedelta(minutes=30)),
    ]
    assert Snapshot.objects.filter(taken_at__gte=now - timedelta(days=90)).count() == 6


@pytest.mark.django_db(transaction=True)
def test_a_run_that_cannot_take_the_lock_is_skipped_and_writes_nothing(on_postgres):
    from atlaso_site.job_runs import JobSkipped

    put("positive", "alpha holds")
    holder = connections.create_connection("default")
    try:
        with holder.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [LOCK_KEY])
        with pytest.raises(JobSkipped):
            diagnostics_recompute()
        assert Snapshot.objects.count() == 0
        with holder.cursor() as cursor:
            # Released explicitly: a closed connection's backend lets go of it a moment later.
            cursor.execute("SELECT pg_advisory_unlock(%s)", [LOCK_KEY])
    finally:
        holder.close()
    assert diagnostics_recompute()["owners"] == 1


@pytest.mark.django_db(transaction=True)
def test_two_overlapping_runs_write_one_snapshot_per_owner(on_postgres):
    from atlaso_site.job_runs import JobSkipped

    for index in range(40):
        put("positive", "alpha holds", user=f"owner-{index}")
    outcomes: list[object] = []
    start = threading.Barrier(2)

    def run() -> None:
        start.wait()
        try:
            outcomes.append(diagnostics_recompute())
        except JobSkipped as skipped:
            outcomes.append(skipped)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    per_owner = Snapshot.objects.filter(user_id__isnull=False).values_list("user_id", flat=True)
    assert sorted(per_owner) == sorted(f"owner-{index}" for index in range(40))
    assert len(outcomes) == 2

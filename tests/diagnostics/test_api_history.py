"""GET /users/{id}/health/history and GET /diagnostics: trends and the conflict backlog."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from deposits.models import ConflictEpisode
from diagnostics import selectors
from diagnostics.models import Snapshot
from diagnostics.schemas import DeploymentSnapshotOut, HealthHistoryOut
from diagnostics.services import diagnostics_recompute
from tests.conftest import make_client
from tests.deposits.scenario import correct, put

pytestmark = pytest.mark.django_db

SNAPSHOT_FIELDS = {
    "taken_at", "fmi", "coverage", "precision", "resolution", "density", "deposit_count", "bag_count",
    "conflict_bag_count", "uncertain_belief_count", "recall_count",
}  # fmt: skip


@pytest.fixture
def admin(db):
    return make_client(channel="ops", perms=("read", "admin"))


def snapshot(user_id: str | None, taken_at, fmi: int = 50) -> Snapshot:
    return Snapshot.objects.create(
        user_id=user_id, taken_at=taken_at, window_days=30, fmi=fmi, coverage=0.5, precision=0.5,
        resolution=0.5, density=0.5, deposit_count=1, bag_count=1, conflict_bag_count=0,
        uncertain_belief_count=0, recall_count=0, owner_count=None if user_id else 1,
    )  # fmt: skip


def test_history_lists_the_owners_snapshots_inside_the_window_oldest_first(api):
    now = timezone.now()
    for days_ago, fmi in ((40, 10), (20, 20), (5, 30)):
        snapshot("alice", now - timedelta(days=days_ago), fmi)
    snapshot("bob", now - timedelta(days=1), 99)
    answer = api.get("/users/alice/health/history")
    assert answer.status == 200
    body = answer.body
    assert (body["kind"], body["user_id"], body["days"]) == ("health_history", "alice", 30)
    assert [p["fmi"] for p in body["points"]] == [20, 30]
    assert set(body["points"][0]) == SNAPSHOT_FIELDS
    assert body["points"][0]["taken_at"].endswith("+00:00")
    assert [p["fmi"] for p in api.get("/users/alice/health/history?days=60").body["points"]] == [10, 20, 30]


def test_the_backlog_counts_open_conflicts_and_the_median_time_to_resolution(api):
    put("positive", "alpha holds")
    wrong = put("negative", "alpha fails")
    correct([wrong], "alpha holds after all")
    put("positive", "bravo holds", {"model": "m", "env": "b"})
    put("negative", "bravo fails", {"model": "m", "env": "b"})
    closed = ConflictEpisode.objects.get(ended_at__isnull=False)
    ConflictEpisode.objects.filter(pk=closed.pk).update(started_at=closed.ended_at - timedelta(hours=6))
    backlog = api.get("/users/alice/health/history").body["backlog"]
    opened = ConflictEpisode.objects.get(ended_at__isnull=True).started_at
    assert backlog["open_conflicts"] == 1
    assert backlog["oldest_open_started_at"] == opened.isoformat(timespec="microseconds")
    assert (backlog["resolved_in_window"], backlog["median_hours_to_resolution"]) == (1, pytest.approx(6))


def test_a_window_with_nothing_resolved_has_no_median(api):
    put("positive", "alpha holds")
    backlog = api.get("/users/alice/health/history?days=7").body["backlog"]
    assert backlog == {
        "open_conflicts": 0,
        "oldest_open_started_at": None,
        "resolved_in_window": 0,
        "median_hours_to_resolution": None,
    }


@pytest.mark.parametrize("days", ["0", "366", "-1", "x"])
def test_days_outside_1_to_365_is_a_422(api, days):
    answer = api.get(f"/users/alice/health/history?days={days}")
    assert (answer.status, answer.body["error"]["code"], answer.body["error"]["field"]) == (
        422,
        "validation_error",
        "days",
    )


def test_a_confined_key_gets_403_for_another_owners_history(db):
    confined = make_client(channel="tenant-a", prefix="tenant-a:")
    assert confined.get("/users/tenant-a:x/health/history").status == 200
    assert confined.get("/users/tenant-b:x/health/history").status == 403


def test_the_deployment_view_computes_current_when_read(admin):
    put("positive", "alpha holds", user="alice")
    diagnostics_recompute()
    put("positive", "bravo holds", {"model": "m", "env": "b"}, user="bob")
    body = admin.get("/diagnostics").body
    assert body["kind"] == "deployment_health"
    assert (body["current"]["owner_count"], body["current"]["deposit_count"]) == (2, 2)
    assert [p["owner_count"] for p in body["points"]] == [1]
    assert set(body["current"]) == SNAPSHOT_FIELDS | {"owner_count"}
    assert body["backlog"]["open_conflicts"] == 0


def test_the_deployment_view_needs_an_unconfined_admin_key(api, db):
    assert api.get("/diagnostics").status == 403
    confined_admin = make_client(channel="tenant-ops", perms=("read", "admin"), prefix="tenant-a:")
    answer = confined_admin.get("/diagnostics")
    assert (answer.status, answer.body["error"]["code"]) == (403, "forbidden")
    assert make_client(channel="ops2", perms=("read", "admin")).get("/diagnostics?days=400").status == 422


# Awkward values for a JSON rendering: whole floats, tiny ones, long ones, a whole-second time.
AWKWARD = [(0.0, 1.0, 1e-05, 0.1 + 0.2), (2 / 3, 5e-324, 1.0, 0.0), (0.5, 0.25, 0.999999999999, 1 / 7)]


def awkward_snapshots(user_id: str | None, now) -> None:
    """Snapshots through both ways of writing them: one at a time, and in bulk (the job's way)."""
    first, *rest = AWKWARD
    taken = now.replace(microsecond=0) - timedelta(days=2)
    snapshot(user_id, taken).delete()
    Snapshot.objects.create(
        user_id=user_id, taken_at=taken, window_days=30, fmi=0, coverage=first[0], precision=first[1],
        resolution=first[2], density=first[3], deposit_count=0, bag_count=0, conflict_bag_count=0,
        uncertain_belief_count=0, recall_count=0, owner_count=None if user_id else 0,
    )  # fmt: skip
    Snapshot.objects.bulk_create(
        Snapshot(
            user_id=user_id, taken_at=now - timedelta(hours=i + 1), window_days=30, fmi=100 - i,
            coverage=c, precision=p, resolution=r, density=d, deposit_count=2**31 - 1, bag_count=i,
            conflict_bag_count=i, uncertain_belief_count=i, recall_count=10**6,
            owner_count=None if user_id else 10_000,
        )
        for i, (c, p, r, d) in enumerate(rest)
    )  # fmt: skip


def rendered(value) -> str:
    """A JSON value as text with sorted keys: equal texts mean equal values of equal types."""
    return json.dumps(value, sort_keys=True)


def test_history_points_are_exactly_what_the_schema_renders(api):
    now = timezone.now()
    awkward_snapshots("alice", now)
    body = api.get("/users/alice/health/history?days=7").body
    expected = HealthHistoryOut.model_validate(
        selectors.health_history(user_id="alice", days=7, now=timezone.now())
    ).model_dump(mode="json")
    assert len(body["points"]) == 3
    assert rendered(body) == rendered(expected)


def test_deployment_points_and_current_are_exactly_what_the_schema_renders(admin):
    put("positive", "alpha holds", user="alice")
    now = timezone.now()
    awkward_snapshots(None, now)
    body = admin.get("/diagnostics?days=7").body
    window = Snapshot.objects.filter(user_id__isnull=True, taken_at__gt=now - timedelta(days=7))
    expected_points = [
        DeploymentSnapshotOut.model_validate(s).model_dump(mode="json")
        for s in window.order_by("taken_at", "id")
    ]
    assert len(expected_points) == 3
    assert rendered(body["points"]) == rendered(expected_points)
    current = selectors.snapshot_of(None, selectors.field_totals_pooled(now=now), now)
    expected_current = DeploymentSnapshotOut.model_validate(current).model_dump(mode="json")
    del body["current"]["taken_at"], expected_current["taken_at"]
    assert rendered(body["current"]) == rendered(expected_current)
    assert body["current"]["deposit_count"] == 1


def test_the_pooled_deployment_sums_what_each_owner_counts(db):
    """Pooled per owner, then over owners: the same totals as adding each owner's up."""
    put("positive", "alpha holds", user="alice")
    put("negative", "alpha fails", user="alice")
    put("positive", "bravo holds", {"model": "m", "env": "b"}, user="alice")
    put("cautionary", "bravo is slow", {"model": "m", "env": "b"}, user="bob")
    put("positive", "bravo holds", {"model": "m", "env": "b"}, user="bob")
    put("open", "charlie?", {"model": "m", "env": "c"}, user="carol")
    now = timezone.now()
    owners = selectors.field_totals_by_owner(["alice", "bob", "carol"], now=now)
    pooled = selectors.field_totals_pooled(now=now)
    assert pooled.owner_count == 3
    for name in ("live_bags", "singleton_bags", "multi_bags", "split_bags", "resolved_bags"):
        assert getattr(pooled.counts, name) == sum(getattr(t.counts, name) for t in owners.values()), name
    assert pooled.counts.agreement_sum == pytest.approx(sum(t.counts.agreement_sum for t in owners.values()))
    # Two bags hold more than one directional claim, each split one to one: 1/2 + 1/2.
    assert (pooled.counts.multi_bags, pooled.counts.agreement_sum) == (2, pytest.approx(1.0))
    assert pooled.deposit_count == 6
    assert pooled.conflict_bag_count == 2


def test_a_trend_read_again_shows_a_new_snapshot_and_loses_a_deleted_one(admin):
    """A trend read again sees exactly what changed in between.

    Reads of one window are not fetched twice while its rows are the same.
    """
    now = timezone.now()
    oldest = snapshot(None, now - timedelta(days=3), fmi=30)
    snapshot(None, now - timedelta(days=2), fmi=40)
    assert [p["fmi"] for p in admin.get("/diagnostics?days=7").body["points"]] == [30, 40]
    assert [p["fmi"] for p in admin.get("/diagnostics?days=7").body["points"]] == [30, 40]
    snapshot(None, now - timedelta(hours=1), fmi=50)
    assert [p["fmi"] for p in admin.get("/diagnostics?days=7").body["points"]] == [30, 40, 50]
    oldest.delete()  # as retention thins old snapshots
    assert [p["fmi"] for p in admin.get("/diagnostics?days=7").body["points"]] == [40, 50]
    assert [p["fmi"] for p in admin.get("/diagnostics?days=1").body["points"]] == [50]

"""GET /users/{id}/health/history and GET /diagnostics: trends and the conflict backlog."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from deposits.models import ConflictEpisode
from diagnostics.models import Snapshot
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

"""/healthz and /readyz: one entry per check with its state and time, 503 when any fails.

(Outages of PostgreSQL, Redis and the worker, for real: tests/faults/test_watching.py.)
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db.migrations.recorder import MigrationRecorder
from django.test import Client, override_settings
from django.utils import timezone

from atlaso_site.job_runs.services import process_beat

pytestmark = pytest.mark.django_db
CHECKS = ["database", "migrations", "broker", "worker", "beat"]


@pytest.fixture(autouse=True)
def broker_folder(tmp_path, settings):
    """The embedded broker's folder, as `make run` makes it."""
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {"data_folder_in": str(tmp_path)}
    settings.REDIS_URL = ""


def beat_both(age_seconds: float = 0) -> None:
    at = timezone.now() - timedelta(seconds=age_seconds)
    process_beat(role="worker", node="celery@host-a", at=at)
    process_beat(role="beat", node="beat@host-a", at=at)


def ready() -> tuple[int, dict]:
    response = Client().get("/readyz")
    assert response["Cache-Control"] == "no-store"
    return response.status_code, response.json()


def test_healthz_answers_without_touching_the_database(django_assert_num_queries):
    with django_assert_num_queries(0):
        response = Client().get("/healthz", HTTP_HOST="10.1.2.3:8000")
    assert response.status_code == 200 and response.json() == {"kind": "health", "state": "ok"}


def test_ready_when_every_check_passes_with_each_ones_state_and_time(django_assert_max_num_queries):
    beat_both(age_seconds=5)
    Client().get("/readyz")  # the migrations on disk are read once per process
    with django_assert_max_num_queries(3):
        status, body = ready()
    assert status == 200 and body["state"] == "ok", body
    assert list(body["checks"]) == CHECKS
    for name, check in body["checks"].items():
        assert check["state"] == "ok", (name, check)
        assert timezone.datetime.fromisoformat(check["time"]).tzinfo is not None
    assert body["checks"]["worker"]["alive"] == 1 and 4 < body["checks"]["worker"]["age_seconds"] < 60
    assert body["checks"]["migrations"]["unapplied"] == []


def test_a_probe_by_the_machines_address_is_answered():
    beat_both()
    response = Client().get("/readyz", HTTP_HOST="10.1.2.3:8000")
    assert response.status_code == 200


def test_no_worker_heartbeat_in_a_minute_fails_the_worker_check():
    beat_both(age_seconds=61)
    process_beat(role="beat", node="beat@host-a", at=timezone.now())
    status, body = ready()
    assert status == 503 and body["state"] == "failing"
    worker = body["checks"]["worker"]
    assert (worker["state"], worker["alive"]) == ("failing", 0) and worker[
        "error"
    ] == "last heartbeat 61 s ago"
    assert body["checks"]["beat"]["state"] == "ok"


@override_settings(PROCESS_HEARTBEAT_STALE_SECONDS=5)
def test_the_staleness_is_a_setting():
    beat_both(age_seconds=6)
    status, body = ready()
    assert status == 503 and body["checks"]["beat"]["state"] == "failing"


def test_a_worker_never_seen_fails_it_too():
    process_beat(role="beat", node="beat@host-a", at=timezone.now())
    status, body = ready()
    assert status == 503 and body["checks"]["worker"] == {
        "state": "failing",
        "time": body["checks"]["worker"]["time"],
        "error": "no heartbeat on record",
        "alive": 0,
    }


def test_an_unapplied_migration_fails_the_migrations_check():
    beat_both()
    MigrationRecorder.Migration.objects.filter(app="jobs", name="0004_processbeat").delete()
    status, body = ready()
    assert status == 503 and body["checks"]["migrations"]["unapplied"] == ["jobs.0004_processbeat"]


def test_a_missing_broker_folder_fails_the_broker_check(settings, tmp_path):
    beat_both()
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {"data_folder_in": str(tmp_path / "gone")}
    status, body = ready()
    assert status == 503 and body["checks"]["broker"]["state"] == "failing"


def test_a_heartbeat_is_one_row_per_process_and_silent_ones_are_forgotten():
    from atlaso_site.job_runs.models import ProcessBeat

    now = timezone.now()
    process_beat(role="worker", node="celery@gone", at=now - timedelta(days=2))
    process_beat(role="worker", node="celery@host-a", at=now - timedelta(seconds=3))
    process_beat(role="worker", node="celery@host-a", at=now)
    assert list(ProcessBeat.objects.values_list("node", "beat_at")) == [("celery@host-a", now)]

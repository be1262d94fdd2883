"""The recall benchmark's own parts: the SQLite pair of files and the concurrent clients."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from atlaso_site.access.models import ApiKey
from atlaso_site.bench import concurrent_recall, sqlite_pair
from atlaso_site.bench.management.commands.bench import QUERIES
from atlaso_site.bench.seed import generate
from beliefs.services import api_key_create
from deposits.models import RecallLog
from tests.deposits.scenario import claim, put_many


def _manage(file: Path, *args: str) -> None:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{file}", "DEBUG": "true"}
    subprocess.run(
        [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), *args],
        env=env,
        check=True,
        capture_output=True,
    )


@pytest.fixture(scope="module")
def shared_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small seeded SQLite store of several owners, as `seed_bench` writes one."""
    file = tmp_path_factory.mktemp("bench") / "shared.sqlite3"
    _manage(file, "migrate", "--verbosity", "0")
    _manage(file, "seed_bench", "--deposits", "400", "--owners", "4")
    return file


def test_the_owners_own_file_holds_exactly_its_deposits_and_finds_them_by_text(shared_file):
    owner, owned, total = sqlite_pair.largest_owner(shared_file)
    alone = sqlite_pair.owner_alone(shared_file, owner)
    assert owned < total
    with sqlite3.connect(alone) as db:
        assert db.execute("SELECT DISTINCT user_id FROM deposits_deposit").fetchall() == [(owner,)]
        assert db.execute("SELECT count(*) FROM deposits_deposit").fetchone() == (owned,)
        # The triggers filled the full-text index: every deposit is found by its first word.
        word = db.execute("SELECT content FROM deposits_deposit LIMIT 1").fetchone()[0].split()[0].lower()
        found = db.execute("SELECT count(*) FROM deposits_fts WHERE deposits_fts MATCH ?", [f'"{word}"'])
        assert found.fetchone()[0] >= 1


def test_the_pair_reports_both_files_figures_and_their_ratio(shared_file):
    result = sqlite_pair.compare(shared_file, repeat=1)
    assert result["owner_deposits"] < result["shared_deposits"] == 400
    for key in ("p50_ms", "p99_ms"):
        figures = result[key]
        assert figures["shared"] > 0 and figures["alone"] > 0
        assert figures["ratio"] == round(figures["shared"] / figures["alone"], 2)
    assert [row["query"] for row in result["per_query"]] == QUERIES


@pytest.mark.django_db(transaction=True)
def test_concurrent_clients_recall_through_http_and_leave_no_recall_log(live_server):
    put_many([claim("positive", f"threshold note {i}") for i in range(5)])
    _, secret = api_key_create(name="test recall", channel_name="bench-recall", permissions=["read"])
    # The suite's SQLite lives in memory behind one shared cache: one client there.
    clients = 3 if connection.vendor == "postgresql" else 1
    run = concurrent_recall.drive(live_server.url, secret, "alice", ["threshold", "note"], clients, 1.0)
    assert run.failures == [] and len(run.latencies) >= clients and run.throughput > 0
    assert RecallLog.objects.filter(user_id="alice").count() == len(run.latencies)


def test_measure_revokes_its_key_and_deletes_its_recall_rows(monkeypatch, db):
    """The bench leaves the store's diagnostics as it found them."""
    calls: list[Any] = []

    def fake_drive(url: str, secret: str, owner: str, queries: Any, clients: int, seconds: float):
        calls.append(clients)
        RecallLog.objects.create(
            user_id=owner, created_at=concurrent_recall.timezone.now(), hit_count=1, returned_confident=False
        )
        return concurrent_recall.Run(clients, seconds, [1.0])

    class NoServer:
        def __init__(self, workers: int) -> None:
            pass

        def __enter__(self) -> str:
            return "http://127.0.0.1:1"

        def __exit__(self, *exc: object) -> None:
            return None

    monkeypatch.setattr(concurrent_recall, "drive", fake_drive)
    monkeypatch.setattr(concurrent_recall, "gunicorn", NoServer)
    single, many = concurrent_recall.measure(
        "bench-00001", QUERIES, workers=2, clients=8, seconds=1, single_seconds=1
    )
    assert (single.clients, many.clients) == (1, 8) and calls == [1, 1, 8]
    assert not RecallLog.objects.filter(user_id="bench-00001").exists()
    assert ApiKey.objects.get(name="bench concurrent recall").revoked_at is not None


def test_the_seed_writes_each_owners_deposits_oldest_first():
    """The clustered layout the recall walk reads by time: an owner's recent rows lie together."""
    seen: dict[str, list] = {}
    generate(
        deposits=600,
        owners=5,
        now=timezone.now(),
        seed=3,
        belief_share=0.0,
        on_owner=lambda owner, rows, bags, edges: seen.setdefault(owner, [row[-1] for row in rows]),
    )
    assert len(seen) == 5
    assert all(times == sorted(times) for times in seen.values())


def test_a_store_seeded_again_replaces_one_the_review_desk_has_used(tmp_path):
    """`seed_bench --replace` clears what reviewers left on the bench owners' bags (a claim, a skip)."""
    file = tmp_path / "replaced.sqlite3"
    _manage(file, "migrate", "--verbosity", "0")
    _manage(file, "seed_bench", "--deposits", "200", "--owners", "2")
    with sqlite3.connect(file) as db:
        bag, owner = db.execute("SELECT id, user_id FROM deposits_scopebag LIMIT 1").fetchone()
        now = timezone.now().isoformat()
        db.execute(
            "INSERT INTO deposits_reviewclaim (bag_id, user_id, reviewer, claimed_at, expires_at) "
            "VALUES (?, ?, 'rita', ?, ?)",
            [bag, owner, now, now],
        )
        db.execute(
            "INSERT INTO deposits_reviewskip (reviewer, bag_id, user_id, note, skipped_at) "
            "VALUES ('rita', ?, ?, '', ?)",
            [bag, owner, now],
        )
    _manage(file, "seed_bench", "--deposits", "200", "--owners", "2", "--replace")
    with sqlite3.connect(file) as db:
        assert db.execute("SELECT count(*) FROM deposits_reviewclaim").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM deposits_deposit").fetchone() == (200,)

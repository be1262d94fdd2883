"""The runbook's backup (docs/OPERATIONS.md, "Backups") of a store taking writes.

pg_dump, restored into a new database and compared, by the script itself
(atlaso_site/ops/backup.py).
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import psycopg
import pytest

from atlaso_site.ops.backup import fingerprints
from tests.faults.keys import deposit, make_keys
from tests.faults.processes import ROOT, Atlaso, ThrowawayPostgres, postgres_bin, wait_for

WRITERS = 3


def test_a_backup_taken_under_load_restores_into_a_new_database_equal_to_its_snapshot(
    atlaso: Atlaso, cluster: ThrowawayPostgres, capsys: pytest.CaptureFixture[str]
):
    agent, _ = make_keys(atlaso)
    atlaso.start_web()
    acknowledged: list[tuple[float, str]] = []
    stop = threading.Event()

    def write(writer: int) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            content = f"w{writer}-{n}"
            answer = atlaso.call("POST", f"/users/load-{writer}/deposits", deposit(content), key=agent,
                                 headers={"Idempotency-Key": content})  # fmt: skip
            assert answer.status == 201, answer.body
            acknowledged.append((time.monotonic(), content))

    threads = [threading.Thread(target=write, args=(n,), daemon=True) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    restored = "t_backup_restored"
    cluster.execute(f"DROP DATABASE IF EXISTS {restored}")
    try:
        wait_for(lambda: len(acknowledged), lambda n: n >= 30, timeout=60, what="writes to flow")
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "atlaso_site.ops.backup", "--source", atlaso.database_url,
             "--restore-into", restored, "--pg-bin", str(postgres_bin())],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        finished = time.monotonic()
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    with capsys.disabled():
        print(f"\n[backup under load] {done.stdout.splitlines()[0] if done.stdout else ''}")
        print(f"[backup under load] {done.stdout.splitlines()[-1] if done.stdout else done.stderr[-2000:]}")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "MISMATCH" not in done.stdout and "every table matches the snapshot dumped" in done.stdout
    assert any(when > started and when < finished for when, _ in acknowledged), "no write during the backup"

    url = atlaso.database_url.rsplit("/", 1)[0] + "/" + restored
    with psycopg.connect(url) as copy:
        stored = {
            row[0] for row in copy.execute("SELECT content FROM deposits_deposit WHERE user_id LIKE 'load-%'")
        }
        before = {content for when, content in acknowledged if when < started}
        assert before <= stored, "a write acknowledged before the backup began is missing from it"
        # The copy is Atlaso's database, whole: Django finds no migration to apply.
        check = subprocess.run(
            [sys.executable, "manage.py", "migrate", "--check"], cwd=ROOT,
            env={**atlaso.env, "DATABASE_URL": url}, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert check.returncode == 0, check.stdout + check.stderr
        # The comparison sees one byte changed in one row.
        same = fingerprints(copy)
        copy.execute("ALTER TABLE deposits_deposit DISABLE TRIGGER USER")
        copy.execute(
            "UPDATE deposits_deposit SET content = content || '.' WHERE id = (SELECT id FROM deposits_deposit ORDER BY created_at, id LIMIT 1)"
        )
        changed = fingerprints(copy)
        copy.rollback()
    assert {t for t in same if same[t] != changed[t]} == {"public.deposits_deposit"}
    cluster.execute(f"DROP DATABASE {restored}")

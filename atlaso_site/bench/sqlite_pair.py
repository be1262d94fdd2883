"""`bench --sqlite FILE`: recall on a shared SQLite file's largest owner against its own file.

The file holding that owner alone is the reference SDK's design: one embedded file per owner.

The owner's file is built from the shared one (its bags, deposits, corrections and conflict
episodes, the full-text index filled by the same triggers), then `bench --only recall` runs on
each file in a process of its own, so each reads its own database as a server would.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError

from atlaso_site.bench.seed import OWNER_PREFIX

# The owner's rows, table by table, parents first (the tables' foreign keys).
OWNER_TABLES = ("deposits_scopebag", "deposits_deposit", "deposits_contradiction", "deposits_conflictepisode")


def _manage(file: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{file.resolve()}"}
    command = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), *args]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise CommandError(f"`manage.py {' '.join(args)}` on {file} failed:\n{done.stdout}{done.stderr}")
    return done


def largest_owner(file: Path) -> tuple[str, int, int]:
    """(the bench's owner in the file, its deposits, the file's deposits)."""
    if not file.exists():
        raise CommandError(
            f"{file} does not exist: seed it first, e.g. DATABASE_URL=sqlite:///{file} "
            "python manage.py migrate && python manage.py seed_bench --deposits 1000000 --owners 10000"
        )
    with sqlite3.connect(file) as db:
        row = db.execute(
            "SELECT user_id FROM deposits_deposit WHERE user_id LIKE ? ORDER BY user_id LIMIT 1",
            [OWNER_PREFIX + "%"],
        ).fetchone()
        if row is None:
            raise CommandError(f"{file} holds no bench store ({OWNER_PREFIX}* owners)")
        owned = db.execute("SELECT count(*) FROM deposits_deposit WHERE user_id = ?", row).fetchone()[0]
        total = db.execute("SELECT count(*) FROM deposits_deposit").fetchone()[0]
    return row[0], owned, total


def owner_alone(file: Path, owner: str) -> Path:
    """A migrated file next to `file` holding `owner`'s rows only (rebuilt on every run)."""
    alone = file.with_name(f"{file.stem}-{owner}-alone{file.suffix}")
    alone.unlink(missing_ok=True)
    _manage(alone, "migrate", "--verbosity", "0")
    with sqlite3.connect(alone) as db:
        db.execute("ATTACH DATABASE ? AS shared", [str(file)])
        for table in OWNER_TABLES:
            columns = ", ".join(row[1] for row in db.execute(f"PRAGMA main.table_info({table})"))
            db.execute(
                f"INSERT INTO main.{table} ({columns}) SELECT {columns} FROM shared.{table} WHERE user_id = ?",
                [owner],
            )
        db.commit()
        db.execute("DETACH DATABASE shared")
        db.execute("ANALYZE")
    return alone


def recall_bench(file: Path, repeat: int) -> dict[str, Any]:
    """`bench --only recall` on `file`, in a process of its own; its JSON report."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "recall.json"
        _manage(file, "bench", "--only", "recall", "--repeat", str(repeat), "--json", str(report))
        return json.loads(report.read_text())


def compare(file: Path, repeat: int) -> dict[str, Any]:
    """Both files' recall figures, and how many times the shared file's p50 and p99 are."""
    owner, owned, total = largest_owner(file)
    alone = owner_alone(file, owner)
    shared_report, alone_report = recall_bench(file, repeat), recall_bench(alone, repeat)

    p50 = (shared_report["recall"]["p50_ms"], alone_report["recall"]["p50_ms"])
    p99 = (shared_report["recall"]["p99_ms"], alone_report["recall"]["p99_ms"])
    return {
        "owner": owner,
        "owner_deposits": owned,
        "shared_file": str(file),
        "shared_deposits": total,
        "alone_file": str(alone),
        "p50_ms": {"shared": p50[0], "alone": p50[1], "ratio": round(p50[0] / p50[1], 2)},
        "p99_ms": {"shared": p99[0], "alone": p99[1], "ratio": round(p99[0] / p99[1], 2)},
        "per_query": [
            {**shared, "alone_recall_ms": alone["recall_ms"], "alone_floor_ms": alone["floor_ms"]}
            for shared, alone in zip(
                shared_report["recall_per_query"], alone_report["recall_per_query"], strict=True
            )
        ],
        "shared_rows": shared_report["rows"],
        "alone_rows": alone_report["rows"],
    }

"""The benchmark app is a tool for people who measure Atlaso: installed only with ATLASO_BENCH."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = {
    "seed_bench", "bench", "bench_table", "bench_beliefs", "bench_client", "bench_ingest", "bench_portability", "loadtest",
}  # fmt: skip


def commands(**env: str) -> set[str]:
    base = {k: v for k, v in os.environ.items() if k != "ATLASO_BENCH"}
    done = subprocess.run(
        [sys.executable, "manage.py", "help", "--commands"],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return set(done.stdout.split())


def test_the_benchmark_commands_exist_only_with_atlaso_bench():
    assert not commands() & COMMANDS
    assert commands(ATLASO_BENCH="false").isdisjoint(COMMANDS)
    assert commands(ATLASO_BENCH="true") >= COMMANDS

"""`make lint`'s complexity gate (.ci/complexity.py) over what `radon cc -j` reports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

GATE = Path(__file__).resolve().parent.parent / ".ci" / "complexity.py"


def _block(name: str, rank: str, complexity: int, *, classname: str | None = None) -> dict[str, object]:
    return {
        "type": "method" if classname else "function",
        "name": name,
        "classname": classname,
        "rank": rank,
        "complexity": complexity,
        "lineno": 10,
    }


def _gate(report: dict[str, object]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(GATE)], input=json.dumps(report), capture_output=True, text=True, check=False
    )


def test_it_passes_code_within_the_bounds():
    report = {"deposits/a.py": [_block("short", "A", 3), *(_block(f"f{i}", "C", 12) for i in range(15))]}
    answer = _gate(report)
    assert answer.returncode == 0, answer.stdout
    assert answer.stdout == ""


def test_it_fails_a_function_ranked_d_and_names_it():
    answer = _gate(
        {"diagnostics/b.py": [_block("tangled", "D", 23)], "deposits/c.py": [_block("fine", "B", 7)]}
    )
    assert answer.returncode == 1
    assert "diagnostics/b.py:10 tangled - D (23)" in answer.stdout
    assert "fine" not in answer.stdout


def test_it_fails_a_d_in_the_client_too():
    answer = _gate({"clients/python/src/atlaso/x.py": [_block("read", "E", 31, classname="Client")]})
    assert answer.returncode == 1
    assert "Client.read - E (31)" in answer.stdout


def test_it_fails_the_sixteenth_c_block_of_server_code_and_lists_them_all():
    report = {"beliefs/d.py": [_block(f"f{i}", "C", 11 + i % 10) for i in range(16)]}
    answer = _gate(report)
    assert answer.returncode == 1
    assert "16 blocks ranked C in server code, past the 15 allowed" in answer.stdout
    assert all(f"beliefs/d.py:10 f{i} - C" in answer.stdout for i in range(16))


def test_the_clients_c_blocks_count_against_no_budget():
    report = {"clients/python/src/atlaso/y.py": [_block(f"g{i}", "C", 15) for i in range(20)]}
    assert _gate(report).returncode == 0


def test_a_file_radon_could_not_parse_fails():
    answer = _gate({"deposits/broken.py": {"error": "invalid syntax (<unknown>, line 3)"}})
    assert answer.returncode == 1
    assert "deposits/broken.py: invalid syntax" in answer.stdout

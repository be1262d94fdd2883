"""The package alone: its wheel, in a fresh virtual environment, runs against a served Atlaso.

Installed with nothing else, it runs `atlaso doctor` and the seeds' first example.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.client.served import ROOT, ServedAtlaso
from tests.client.test_seed_examples import WRITING_ONE

pytestmark = pytest.mark.once


def run(*command: str | Path, env: dict[str, str] | None = None, timeout: float = 300) -> str:
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True, env=env, timeout=timeout)
    assert done.returncode == 0, (
        f"{' '.join(map(str, command))} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout


def test_the_wheel_installs_alone_and_works_against_the_server(served: ServedAtlaso, tmp_path: Path):
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", tmp_path / "dist",
        ROOT / "clients" / "python")  # fmt: skip
    (wheel,) = (tmp_path / "dist").glob("atlaso-0.2.0-py3-none-any.whl")

    venv = tmp_path / "venv"
    run(getattr(sys, "_base_executable", sys.executable), "-m", "venv", venv)
    python = venv / "bin" / "python"
    run(python, "-m", "pip", "install", "--quiet", wheel)
    installed = {line.split("==")[0].lower() for line in run(python, "-m", "pip", "freeze").split()}
    assert "atlaso" in installed and "httpx" in installed
    assert not installed & {"django", "mcp", "pydantic", "psycopg"}, installed

    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("ATLASO_", "DATABASE_", "DJANGO_", "PYTHON"))
    }
    env |= {"ATLASO_BASE_URL": served.url, "ATLASO_API_KEY": served.keys["client-rw"]}
    doctor = run(venv / "bin" / "atlaso", "doctor", env=env)
    assert "key:      'client-rw' on channel 'client-rw', tier agent_own" in doctor
    assert doctor.rstrip().endswith("ok")

    run(python, "-c", WRITING_ONE + "print(user.recall('threshold').explain())", env=env)
    example = run(python, "-c", WRITING_ONE + "print(user.peek().deposits[0].content)", env=env)
    assert example == "Threshold of 0.7 over-flags in production\n"
    # Without the mcp extra, `atlaso mcp` says what to install rather than a traceback.
    done = subprocess.run(
        [venv / "bin" / "atlaso", "mcp"], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 1 and 'pip install "atlaso[mcp]"' in done.stderr

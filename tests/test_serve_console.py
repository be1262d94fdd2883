"""What `make run`'s console shows: the supervisor's lines and each child's log.

Without Celery's banners, and without its warning about root, which serve explains in one line
of its own.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from atlaso_site.supervisor import AS_ROOT, without_the_root_warning
from tests.client.served import ROOT, free_port

# serve runs on SQLite in a folder of its own, whatever the suite's database.
pytestmark = pytest.mark.once

WARNS = """\
import warnings
from celery.exceptions import SecurityWarning
from celery.platforms import ASSUMING_ROOT, ROOT_DISCOURAGED
warnings.warn(SecurityWarning(ROOT_DISCOURAGED.format(uid=0, euid=0, gid=0, egid=0)))
warnings.warn(SecurityWarning(ASSUMING_ROOT))
warnings.warn(RuntimeWarning("a warning of Atlaso's own"))
"""


def fresh_env() -> dict[str, str]:
    """This environment without the suite's database, broker, folders or key: a fresh machine's."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DATABASE_", "REDIS_", "CELERY_", "ATLASO_", "SECRET_KEY", "PYTHONWARNINGS"))
    }


def test_the_filter_leaves_out_celerys_warning_about_root_and_no_other():
    env = {**os.environ, "PYTHONWARNINGS": without_the_root_warning("default::DeprecationWarning")}
    done = subprocess.run([sys.executable, "-c", WARNS], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "superuser privileges" not in done.stderr
    assert "An entry for the specified gid or egid was not found" in done.stderr
    assert "a warning of Atlaso's own" in done.stderr
    assert env["PYTHONWARNINGS"].startswith("default::DeprecationWarning,ignore:")


def test_make_runs_console_has_no_celery_banner_and_says_once_why_root_is_allowed(tmp_path: Path):
    env = fresh_env()
    env |= {"DEBUG": "false", "SECRET_KEY": "console-test-only-not-a-secret", "ATLASO_VAR_DIR": str(tmp_path),
            "ALLOWED_HOSTS": "127.0.0.1"}  # fmt: skip
    migrated = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert migrated.returncode == 0, migrated.stderr[-3000:]
    console = tmp_path / "console.txt"
    with console.open("wb") as out:
        serve = subprocess.Popen(
            [sys.executable, "-m", "atlaso_site.supervisor", "--port", str(free_port())],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not all(line in console.read_text() for line in ("ready.", "beat: Starting")):
            assert serve.poll() is None and time.monotonic() < deadline, console.read_text()
            time.sleep(0.2)
    finally:
        serve.send_signal(signal.SIGINT)
        serve.wait(timeout=30)
    shown = console.read_text()
    assert "Atlaso is starting: open http://127.0.0.1:" in shown
    # The worker's banner (its ASCII art, configuration and task list) and beat's.
    for banner in ("-------------- celery@", "[tasks]", "celery beat v", "Configuration ->"):
        assert banner not in shown, shown
    assert "superuser privileges" not in shown, shown
    assert (f"serve: {AS_ROOT}" in shown) is (os.geteuid() == 0), shown
    assert shown.count("serve: running as root") <= 1
    assert "Traceback" not in shown, shown


def test_make_runs_demo_data_asks_for_its_embeddings_before_any_worker_has_started(tmp_path: Path):
    """`make run` loads the demo before serving: its writes' task requests must find the broker's folders."""
    env = fresh_env()
    env |= {"SECRET_KEY": "console-test-only-not-a-secret", "ATLASO_VAR_DIR": str(tmp_path / "var")}
    for command in (["migrate", "--no-input", "-v", "0"], ["load_demo"]):
        done = subprocess.run(
            [sys.executable, "manage.py", *command],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
    assert "could not ask" not in done.stdout + done.stderr, done.stderr[-3000:]
    assert list((tmp_path / "var" / "celery-queue").iterdir()), "no task request was queued"


def test_make_run_says_in_one_line_when_recall_by_meaning_is_off(monkeypatch):
    from atlaso_site import settings
    from atlaso_site import supervisor as serve

    monkeypatch.setattr(settings, "ATLASO_EMBEDDER", "none")
    line = serve.embedder_line()
    assert line is not None and "\n" not in line
    assert line.startswith("recall by meaning is off: ")
    assert "ATLASO_EMBEDDER=openai" in line
    monkeypatch.setattr(settings, "ATLASO_EMBEDDER", "local")
    assert serve.embedder_line() is None

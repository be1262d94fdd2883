"""`make run`'s foreground: gunicorn, a Celery worker and Celery beat; one Ctrl-C stops all three."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from atlaso_site.settings import VAR_DIR, WEB_THREADS, WEB_WORKERS

# The longest request line gunicorn accepts: its maximum (a larger value is cut to this). A
# finite limit refuses a 10 MB line after its first 8 KB (414) instead of reading it in
# quadratic time. Every valid request fits: the API reads a query string of at most 7 KiB and
# answers a longer one itself, in its envelope (MAX_QUERY_STRING in atlaso_site/middleware.py),
# so its longest valid request line is 7,986 bytes.
LIMIT_REQUEST_LINE = 8190


def commands(host: str, port: int) -> dict[str, list[str]]:
    python = sys.executable
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    for folder in ("celery-queue", "celery-processed"):
        (VAR_DIR / folder).mkdir(exist_ok=True)
    return {
        # Threads: a request spends most of its time waiting for PostgreSQL, and a thread that
        # waits lets another run (measured in docs/BENCHMARKS.md, "Serving under load").
        "web": [python, "-m", "gunicorn", "atlaso_site.wsgi", "--bind", f"{host}:{port}",
                "--worker-class", "gthread", "--workers", str(WEB_WORKERS), "--threads", str(WEB_THREADS),
                "--access-logfile", "-", "--graceful-timeout", "5",
                "--limit-request-line", str(LIMIT_REQUEST_LINE)],
        "worker": [python, "-m", "celery", "-A", "atlaso_site", "worker", "--loglevel", "INFO", "--concurrency", "2"],
        "beat": [python, "-m", "celery", "-A", "atlaso_site", "beat", "--loglevel", "INFO",
                 "--schedule", str(Path(VAR_DIR) / "celerybeat-schedule")],
    }  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    processes = {
        name: subprocess.Popen(cmd, env=os.environ.copy())
        for name, cmd in commands(args.host, args.port).items()
    }
    print(f"\nAtlaso is starting: open http://{args.host}:{args.port}/ "
          f"(API docs at http://{args.host}:{args.port}/api/v1/docs). Ctrl-C stops everything.\n", flush=True)  # fmt: skip

    stopping = False

    def stop(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    exit_code = 0
    while not stopping:
        for name, process in processes.items():
            if process.poll() is not None:
                print(f"{name} exited with code {process.returncode}; stopping the others", file=sys.stderr)
                exit_code = process.returncode or 1
                stopping = True
        time.sleep(0.5)
    for process in processes.values():
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 10
    for process in processes.values():
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
    return exit_code


if __name__ == "__main__":
    sys.exit(main())

"""The metrics of a machine that runs Celery workers and no web process, for Prometheus to scrape.

`python -m atlaso_site.observability.exporter --host 0.0.0.0 --port 9808` serves them.

On a machine with a web process, `/metrics` already sums every process that shares its
`PROMETHEUS_MULTIPROC_DIR` (`atlaso_site.supervisor` gives the web workers and the Celery worker
the same folder). A worker-only machine has no `/metrics`: run its workers with
`PROMETHEUS_MULTIPROC_DIR` set, and this beside them, reading the same folder. It serves the
processes' own series (job runs ended, by job and status); the deployment's state (conflicts,
readiness, last successes) comes from any web process's `/metrics`. No Django is loaded.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

from prometheus_client import CollectorRegistry, multiprocess, start_http_server


def serve(host: str, port: int) -> tuple[object, threading.Thread]:
    """Serve the folder's figures on host:port, in a thread; the server and its thread."""
    folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not folder or not os.path.isdir(folder):
        raise SystemExit(
            "set PROMETHEUS_MULTIPROC_DIR to the folder the Celery workers write their metrics to"
        )
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=folder)
    return start_http_server(port, addr=host, registry=registry)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9808)
    args = parser.parse_args(argv)
    serve(args.host, args.port)
    print(
        f"serving {os.environ['PROMETHEUS_MULTIPROC_DIR']} on http://{args.host}:{args.port}/metrics",
        flush=True,
    )
    stopped = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopped.set())
    stopped.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`bench --concurrent`: recall through gunicorn as production serves it, from several clients.

The gunicorn `make run` and production start (`atlaso_site.supervisor`'s web command: gevent's
worker, bounded against slow clients, `WEB_THREADS` requests at once per worker, each with a
connection from its pool) is started with `workers` processes on a free port against the
configured database; each client thread keeps one connection and sends the bench's queries in
turn to `GET /users/{owner}/recall` for the given seconds. The run's API key is revoked and its
recall log rows deleted afterwards, so the run leaves the store's diagnostics unchanged.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import urlencode

from django.conf import settings
from django.core.management.base import CommandError
from django.utils import timezone

from atlaso_site import supervisor
from atlaso_site.bench.management.commands.loadtest import Connection
from beliefs.services import api_key_create, api_key_revoke
from deposits.models import RecallLog

READY_SECONDS = 60.0


@dataclass
class Run:
    """What the clients saw: every recall's latency (ms) and the statuses that were not 200."""

    clients: int
    seconds: float
    latencies: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def throughput(self) -> float:
        return len(self.latencies) / self.seconds


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def gunicorn(workers: int, *, started: Callable[[int], object] | None = None) -> Iterator[str]:
    """A gunicorn serving this project on a free local port, yielding its base URL while it runs.

    `started` is told its master's pid once it listens.
    """
    port = _free_port()
    # Production's command, its access log (one line per recall) discarded rather than read.
    command = supervisor.commands("127.0.0.1", port)["web"]
    command[command.index("--workers") + 1] = str(workers)
    command += ["--log-level", "warning"]
    # Served as in production: DEBUG off (with it on, Django logs every statement with its
    # parameters quoted, which alone costs a recall 10-20 ms), so a key and the host are given.
    environment = {
        **os.environ,
        "DEBUG": "false",
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECRET_KEY": os.environ.get("SECRET_KEY") or settings.SECRET_KEY,
    }
    server = subprocess.Popen(command, cwd=settings.BASE_DIR, env=environment, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + READY_SECONDS
        while True:
            if server.poll() is not None:
                raise CommandError(f"gunicorn exited with {server.returncode} before it served")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise CommandError(
                        f"gunicorn did not listen on {port} within {READY_SECONDS:.0f} s"
                    ) from None
                time.sleep(0.2)
        if started is not None:
            started(server.pid)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _client(
    url: str, secret: str, owner: str, queries: Sequence[str], first: int, until: float, run: Run
) -> None:
    connection = Connection(url, secret, timeout=60)
    latencies: list[float] = []
    failures: list[str] = []
    number = first
    try:
        while time.monotonic() < until:
            query = queries[number % len(queries)]
            number += 1
            answer = connection.send("GET", f"/users/{owner}/recall?{urlencode({'q': query})}")
            if answer.status == 200:
                latencies.append(answer.seconds * 1000)
            else:
                failures.append(f"{answer.status} for {query!r}")
    finally:
        connection.close()
    with run.lock:
        run.latencies += latencies
        run.failures += failures


def drive(url: str, secret: str, owner: str, queries: Sequence[str], clients: int, seconds: float) -> Run:
    """`clients` threads sending recalls for `seconds`; each starts at another query."""
    run = Run(clients, seconds)
    until = time.monotonic() + seconds
    threads = [
        threading.Thread(target=_client, args=(url, secret, owner, queries, n * 7, until, run))
        for n in range(clients)
    ]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    run.seconds = time.monotonic() - started
    return run


def measure(
    owner: str, queries: Sequence[str], *, workers: int, clients: int, seconds: float, single_seconds: float
) -> tuple[Run, Run]:
    """(one client, `clients` clients) through one gunicorn; the store is left as it was."""
    key, secret = api_key_create(
        name="bench concurrent recall", channel_name="bench-recall", permissions=["read"]
    )
    started = timezone.now()
    try:
        with gunicorn(workers) as url:
            drive(url, secret, owner, queries, 1, 3)  # each worker connects and plans once
            single = drive(url, secret, owner, queries, 1, single_seconds)
            many = drive(url, secret, owner, queries, clients, seconds)
    finally:
        api_key_revoke(key=key)
        RecallLog.objects.filter(user_id=owner, created_at__gte=started).delete()
    return single, many

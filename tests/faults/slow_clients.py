"""Slow clients against a server, and a client that times normal requests meanwhile.

`SlowClients` holds connections open the way a slowloris does: most send a request line and
then one header line every `interval` seconds, never ending the headers; the rest send whole
headers announcing a body and then the body one byte every `interval` seconds. A connection
the server closes is opened again at once, so the server always faces the same number.
`measure` sends normal requests meanwhile, each on a new connection, and times them.

Run by hand against any server (only on this machine's loopback):

    python -m tests.faults.slow_clients --url http://127.0.0.1:8000 --key KEY --connections 200 --seconds 60
"""

from __future__ import annotations

import argparse
import math
import selectors
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.client import HTTPConnection
from urllib.parse import urlsplit

# What a body dribbler claims to send: far more than it will in a minute at a byte a beat.
BODY_LENGTH = 10_000


@dataclass
class Dribbler:
    """One slow connection: what it sends first, and what it sends at every beat after."""

    sock: socket.socket
    sends_body: bool
    opened: float
    next_beat: float


@dataclass
class Held:
    """What the slow clients saw: connections open over time, and how the server ended them."""

    samples: list[int] = field(default_factory=list)  # connections open, once a second (after reopening)
    opened: int = 0
    cut: int = 0  # closed by the server (or refused) while dribbling
    answered: Counter[str] = field(default_factory=Counter)  # first line of what the server said
    longest_held: float = 0.0  # the longest any one connection stayed open, seconds

    def line(self) -> str:
        low = min(self.samples, default=0)
        mean = sum(self.samples) / len(self.samples) if self.samples else 0.0
        said = ", ".join(f"{n} × {status!r}" for status, n in self.answered.most_common(3)) or "nothing"
        return (
            f"slow connections open: mean {mean:.0f}, min {low} (sampled each second); opened "
            f"{self.opened}, cut by the server {self.cut} (it answered {said}); longest held "
            f"{self.longest_held:.1f} s"
        )


class SlowClients:
    """`connections` slowloris connections to host:port, in one thread, until `stop()`."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        connections: int = 200,
        body_share: float = 0.25,
        interval: float = 3.0,
        key: str = "",
    ) -> None:
        self.host, self.port = host, port
        self.connections = connections
        self.body_count = round(connections * body_share)
        self.interval = interval
        self.key = key
        self.held = Held()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="slow-clients", daemon=True)
        self._selector = selectors.DefaultSelector()
        self._open: dict[int, Dribbler] = {}

    def __enter__(self) -> SlowClients:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> Held:
        self._stop.set()
        self._thread.join(timeout=30)
        return self.held

    def _first_bytes(self, sends_body: bool) -> bytes:
        host = f"Host: {self.host}:{self.port}\r\n"
        auth = f"Authorization: Bearer {self.key}\r\n" if self.key else ""
        if sends_body:
            return (
                f"POST /api/v1/users/slow-client/deposits HTTP/1.1\r\n{host}{auth}"
                f"Content-Type: application/json\r\nContent-Length: {BODY_LENGTH}\r\n\r\n{{"
            ).encode()
        return f"GET /api/v1/tiers HTTP/1.1\r\n{host}{auth}".encode()

    def _open_one(self, sends_body: bool) -> None:
        now = time.monotonic()
        sock = socket.socket()
        sock.setblocking(False)
        self.held.opened += 1
        try:
            sock.connect_ex((self.host, self.port))
            # A connection not yet accepted counts as held: the server has it in its backlog.
            deadline = now + 5
            while True:
                try:
                    sock.send(self._first_bytes(sends_body))
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline or self._stop.is_set():
                        raise OSError("connect timed out") from None
                    time.sleep(0.01)
        except OSError:
            sock.close()
            self.held.cut += 1
            return
        dribbler = Dribbler(sock, sends_body, now, now + self.interval)
        self._open[sock.fileno()] = dribbler
        self._selector.register(sock, selectors.EVENT_READ, dribbler)

    def _close(self, dribbler: Dribbler, *, by_server: bool) -> None:
        self._selector.unregister(dribbler.sock)
        del self._open[dribbler.sock.fileno()]
        self.held.longest_held = max(self.held.longest_held, time.monotonic() - dribbler.opened)
        dribbler.sock.close()
        if by_server:
            self.held.cut += 1

    def _beat(self, dribbler: Dribbler) -> None:
        try:
            dribbler.sock.send(b"a" if dribbler.sends_body else b"X-Slow: 1\r\n")
        except OSError:
            self._close(dribbler, by_server=True)
            return
        dribbler.next_beat = time.monotonic() + self.interval

    def _read(self, dribbler: Dribbler) -> None:
        """The server said something, or closed: either way this connection's turn is over."""
        try:
            said = dribbler.sock.recv(4096)
        except OSError:
            said = b""
        if said:
            self.held.answered[said.split(b"\r\n", 1)[0].decode(errors="replace")] += 1
        self._close(dribbler, by_server=True)

    def _top_up(self) -> None:
        bodies = sum(1 for d in self._open.values() if d.sends_body)
        for _ in range(self.body_count - bodies):
            self._open_one(sends_body=True)
        for _ in range(self.connections - len(self._open)):
            self._open_one(sends_body=False)

    def _run(self) -> None:
        next_sample = time.monotonic() + 1
        try:
            while not self._stop.is_set():
                self._top_up()
                now = time.monotonic()
                if now >= next_sample:  # after opening again what the server closed
                    self.held.samples.append(len(self._open))
                    next_sample += 1
                for key, _ in self._selector.select(timeout=0.2):
                    self._read(key.data)
                now = time.monotonic()
                for dribbler in [d for d in self._open.values() if d.next_beat <= now]:
                    self._beat(dribbler)
        finally:
            for dribbler in list(self._open.values()):
                self._close(dribbler, by_server=False)
            self._selector.close()


@dataclass
class Timings:
    """What the normal client saw: each request's seconds, and the ones that failed."""

    seconds: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def percentile(self, share: float) -> float:
        ordered = sorted(self.seconds)
        return ordered[max(0, math.ceil(share * len(ordered)) - 1)] if ordered else math.inf

    def line(self) -> str:
        return (
            f"normal requests answered: {len(self.seconds)}, failed {len(self.failures)}; p50 "
            f"{self.percentile(0.5) * 1000:.0f} ms, p99 {self.percentile(0.99) * 1000:.0f} ms, max "
            f"{max(self.seconds, default=0) * 1000:.0f} ms"
        )


def measure(
    host: str, port: int, *, seconds: float, key: str, clients: int = 2, timeout: float = 10
) -> Timings:
    """`clients` threads sending `GET /api/v1/tiers` on new connections for `seconds`.

    With the key, so it reads the database; anything but a 200 within `timeout` is a failure.
    """
    timings = Timings()
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def client() -> None:
        while time.monotonic() < deadline:
            started = time.monotonic()
            connection = HTTPConnection(host, port, timeout=timeout)
            try:
                connection.request("GET", "/api/v1/tiers", headers={"Authorization": f"Bearer {key}"})
                response = connection.getresponse()
                response.read()
                failure = None if response.status == 200 else f"status {response.status}"
            except OSError as error:
                failure = f"{type(error).__name__}: {error}"
            finally:
                connection.close()
            took = time.monotonic() - started
            with lock:
                timings.seconds.append(took) if failure is None else timings.failures.append(failure)
            time.sleep(0.05)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--key", required=True, help="an API key: the normal requests read the database")
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--body-share", type=float, default=0.25)
    parser.add_argument("--interval", type=float, default=3.0)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--warm-up", type=float, default=5, help="seconds the slow clients hold first")
    args = parser.parse_args()
    parts = urlsplit(args.url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    if host not in {"127.0.0.1", "localhost", "::1"}:
        parser.error("slow clients are for a server on this machine's loopback only")
    with SlowClients(
        host,
        port,
        connections=args.connections,
        body_share=args.body_share,
        interval=args.interval,
        key=args.key,
    ) as slow:
        time.sleep(args.warm_up)
        timings = measure(host, port, seconds=args.seconds, key=args.key)
    print(slow.held.line())
    print(timings.line())
    for failure, n in Counter(timings.failures).most_common(5):
        print(f"  {n} × {failure}")


if __name__ == "__main__":
    main()

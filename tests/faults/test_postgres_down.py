"""PostgreSQL stopped during writes: 503s while it is down, then recovery with no restart.

503 envelopes with Retry-After while it is down, recovery with no restart once it is back, and every
acknowledged write present exactly once.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from tests.faults.keys import deposit, make_keys
from tests.faults.processes import Atlaso, ThrowawayPostgres, wait_for

WRITERS = 4
BULK_ITEMS = 10


@dataclass
class Tally:
    """What the writers saw, shared between their threads."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    acknowledged: list[tuple[float, int, str]] = field(default_factory=list)  # (when, writer, content)
    unavailable: list[tuple[dict[str, Any], str | None]] = field(default_factory=list)  # (body, Retry-After)
    unexpected: list[tuple[str, int | str, Any]] = field(default_factory=list)  # (request, status, body)

    def acknowledged_since(self, moment: float) -> set[int]:
        with self.lock:
            return {writer for when, writer, _ in self.acknowledged if when > moment}


def write_until_stopped(atlaso: Atlaso, key: str, writer: int, stop: threading.Event, tally: Tally) -> None:
    """Single deposits, and every fourth request a bulk, each sent until it is acknowledged.

    A retry repeats the request with the same idempotency keys, as a client should: one that
    committed before its answer was lost is then a replay, never a second deposit.
    """
    sequence = 0
    while not stop.is_set():
        sequence += 1
        name = f"w{writer}-{sequence}"
        if sequence % 4 == 0:
            contents = [f"{name}-{i}" for i in range(BULK_ITEMS)]
            items = [{**deposit(content), "idempotency_key": f"k-{content}"} for content in contents]
            request: dict[str, Any] = {
                "path": f"/users/fault-{writer}/deposits/bulk",
                "body": {"items": items},
            }
        else:
            contents = [name]
            request = {
                "path": f"/users/fault-{writer}/deposits",
                "body": deposit(name),
                "headers": {"Idempotency-Key": f"k-{name}"},
            }
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                answer = atlaso.call("POST", key=key, **request)
            except OSError as error:
                with tally.lock:
                    tally.unexpected.append((request["path"], "no answer", repr(error)))
                return
            if 200 <= answer.status < 300:
                with tally.lock:
                    tally.acknowledged.extend((time.monotonic(), writer, content) for content in contents)
                break
            if answer.status == 503:
                with tally.lock:
                    tally.unavailable.append((answer.body, answer.headers.get("retry-after")))
                time.sleep(0.2)
                continue
            with tally.lock:
                tally.unexpected.append((request["path"], answer.status, answer.body))
            return
        else:
            with tally.lock:
                tally.unexpected.append((request["path"], "never acknowledged in 60 s", None))
            return


def test_postgres_stopped_during_writes_answers_503_then_recovers_and_keeps_every_acknowledged_write_once(
    atlaso: Atlaso, cluster: ThrowawayPostgres
):
    agent, _ = make_keys(atlaso)
    atlaso.start_web()
    web = atlaso.processes["web"]
    tally, stop = Tally(), threading.Event()
    writers = [
        threading.Thread(target=write_until_stopped, args=(atlaso, agent, n, stop, tally), daemon=True)
        for n in range(WRITERS)
    ]
    for thread in writers:
        thread.start()
    try:
        wait_for(lambda: len(tally.acknowledged), lambda n: n >= 20, timeout=60, what="writes to flow")
        cluster.stop()
        wait_for(
            lambda: len(tally.unavailable), lambda n: n >= WRITERS, timeout=30, what="503s during the outage"
        )
        time.sleep(1)
        cluster.start()
        back = time.monotonic()
        # Every writer is acknowledged again, by the same gunicorn, with no restart of anything.
        wait_for(
            lambda: tally.acknowledged_since(back),
            lambda writers_back: len(writers_back) == WRITERS or bool(tally.unexpected),
            timeout=60,
            what="every writer to be acknowledged after PostgreSQL is back",
        )
    finally:
        stop.set()
        for thread in writers:
            thread.join(timeout=90)
        if not cluster.is_running():
            cluster.start()

    assert tally.unexpected == [], tally.unexpected[:5]
    assert web.poll() is None and atlaso.processes["web"] is web
    for body, retry_after in tally.unavailable:
        assert body["kind"] == "error" and body["error"]["code"] == "unavailable", body
        assert retry_after is not None and int(retry_after) > 0
    acknowledged = [content for _, _, content in tally.acknowledged]
    stored = dict(
        atlaso.sql(
            "SELECT content, count(*) FROM deposits_deposit WHERE user_id LIKE %s GROUP BY content",
            ("fault-%",),
        )
    )
    assert {content: n for content, n in stored.items() if n != 1} == {}, "a write was stored twice"
    assert sorted(stored) == sorted(acknowledged), (
        "an acknowledged write is missing, or one never acknowledged is kept"
    )
    assert len(acknowledged) == len(set(acknowledged))

"""200 slow clients for a minute leave every other request answered quickly, and are cut.

Against the web server as `make run` starts it: the server ends the slow ones by itself.
"""

from __future__ import annotations

import time

import pytest

from tests.faults.keys import make_keys
from tests.faults.processes import Atlaso, wait_for
from tests.faults.slow_clients import SlowClients, measure

CONNECTIONS = 200
BODY_SHARE = 0.25  # 50 of them send a body a byte at a time; the others a header line at a time
INTERVAL = 3.0  # seconds between one slow client's lines (or bytes)
HOLD = 60.0
HEADER_TIMEOUT, BODY_TIMEOUT = 10, 20


def test_two_hundred_slow_clients_for_a_minute_neither_fail_nor_slow_down_other_requests(
    atlaso: Atlaso, capsys: pytest.CaptureFixture[str]
):
    # The serving bounds, shorter than by default (10 s and 60 s) so the minute sees each of
    # them end slow connections several times, and the clients open new ones at once.
    atlaso.extra_env.update(WEB_HEADER_TIMEOUT=str(HEADER_TIMEOUT), WEB_BODY_TIMEOUT=str(BODY_TIMEOUT))
    agent, _ = make_keys(atlaso)
    atlaso.start_web()
    slow = SlowClients(
        "127.0.0.1", atlaso.port, connections=CONNECTIONS, body_share=BODY_SHARE, interval=INTERVAL, key=agent
    )
    with slow:
        wait_for(
            lambda: slow.held.samples[-1:], lambda last: last == [CONNECTIONS], timeout=30, what="200 held"
        )
        started = time.monotonic()
        timings = measure("127.0.0.1", atlaso.port, seconds=HOLD, key=agent)
        took = time.monotonic() - started
    with capsys.disabled():
        print(f"\n[slow clients] {CONNECTIONS} slow connections for {took:.0f} s ({slow.held.line()})")
        print(f"[slow clients] {timings.line()}")

    assert timings.failures == [], timings.failures[:5]
    assert len(timings.seconds) > 200 and timings.percentile(0.99) < 1.0, timings.line()
    held = slow.held.samples[-int(HOLD) :]
    assert sum(held) / len(held) > 0.95 * CONNECTIONS and min(held) > 0.8 * CONNECTIONS, held
    # The server, not the clients, ended them: header lines never ending closed after
    # WEB_HEADER_TIMEOUT, bodies not arriving answered 408 after WEB_BODY_TIMEOUT.
    assert slow.held.cut > CONNECTIONS, slow.held.line()
    assert any(line.startswith("HTTP/1.1 408") for line in slow.held.answered), slow.held.answered
    assert slow.held.longest_held < BODY_TIMEOUT + 2 * INTERVAL + 5, slow.held.line()

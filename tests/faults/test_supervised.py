"""`make run`'s processes under `atlaso_site.supervisor`, killed and stopped.

The Celery worker, beat and a web worker each killed with kill -9 come back by themselves while
requests go on being answered, and SIGTERM stops them all.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from pathlib import Path

import pytest

from tests.faults.keys import make_keys
from tests.faults.processes import Atlaso, ThrowawayRedis, wait_for

# The log lines of supervision: serve's, and gunicorn's own about its workers.
SUPERVISION = r"serve:|SIGKILL|Booting worker"


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in path.read_text().split()] if path.exists() else []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")


def started(atlaso: Atlaso) -> dict[str, int]:
    """The pid serve last started each of its children with, from its log."""
    found = re.findall(r"serve: started (\w+)(?: again)? \(pid (\d+)", atlaso.log("serve"))
    return {name: int(pid) for name, pid in found}


class Requests:
    """Requests sent one after another while the test kills things: each answered, or why not.

    A request whose connection a killed web worker took down with it is sent once more, as a
    client would send a GET again; a second failure counts.
    """

    def __init__(self, atlaso: Atlaso, key: str) -> None:
        self.atlaso, self.key = atlaso, key
        self.answered = 0
        self.retried = 0
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._send, daemon=True)

    def __enter__(self) -> Requests:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _once(self) -> int:
        return self.atlaso.call("GET", "/tiers", key=self.key, timeout=10).status

    def _send(self) -> None:
        while not self._stop.is_set():
            try:
                status = self._once()
            except OSError:
                self.retried += 1
                try:
                    status = self._once()
                except OSError as error:
                    status = 0
                    self.failures.append(f"{type(error).__name__}: {error}")
            if status == 200:
                self.answered += 1
            elif status:
                self.failures.append(f"status {status}")
            time.sleep(0.05)


def test_each_process_killed_under_serve_comes_back_by_itself_and_requests_are_answered_throughout(
    atlaso: Atlaso, redis: ThrowawayRedis, capsys: pytest.CaptureFixture[str]
):
    atlaso.redis_url = redis.url
    _, admin = make_keys(atlaso)
    serve = atlaso.start_serve()
    wait_for(lambda: " ready." in atlaso.log("serve"), bool, timeout=60, what="the Celery worker to be ready")

    def a_job_runs() -> None:
        run = atlaso.call("POST", "/jobs/expire_idempotency_keys/runs", key=admin)
        assert run.status == 202, run.body
        assert atlaso.wait_for_run(run.body["id"], admin, timeout=60)["status"] == "succeeded"

    with Requests(atlaso, admin) as requests:
        for name in ("worker", "beat"):
            before = started(atlaso)[name]
            os.kill(before, signal.SIGKILL)
            again = wait_for(lambda: started(atlaso)[name], lambda pid: pid != before, timeout=30, what=name)  # noqa: B023
            assert alive(again) and not alive(before)
        a_job_runs()  # the new worker takes runs; the new beat keeps running
        assert alive(started(atlaso)["beat"])

        master = started(atlaso)["web"]
        web_workers = children(master)
        assert len(web_workers) == 2, web_workers
        count = requests.answered
        os.kill(web_workers[0], signal.SIGKILL)
        # gunicorn, supervised by serve, starts another worker in its place itself.
        wait_for(lambda: children(master), lambda now: len(now) == 2 and web_workers[0] not in now, timeout=30,
                 what="gunicorn to replace its killed worker")  # fmt: skip
        wait_for(lambda: requests.answered, lambda n: n > count + 5, timeout=30, what="requests answered")

    log = atlaso.log("serve")
    with capsys.disabled():
        print(
            "\n[supervised] "
            + "\n[supervised] ".join(line for line in log.splitlines() if re.search(SUPERVISION, line))
        )
        print(
            f"[supervised] requests answered while killing: {requests.answered}, sent twice: {requests.retried}"
        )
    assert requests.failures == [], requests.failures
    assert re.search(r"serve: worker \(pid \d+\) was killed by SIGKILL; restart 1 in 1 s", log), log
    assert re.search(r"serve: beat \(pid \d+\) was killed by SIGKILL; restart 1 in 1 s", log), log
    assert serve.poll() is None

    # One SIGTERM (what Ctrl-C does too) stops them all, gunicorn's workers included.
    everyone = [*started(atlaso).values(), *children(started(atlaso)["web"])]
    serve.send_signal(signal.SIGTERM)
    assert serve.wait(timeout=30) == 0
    wait_for(
        lambda: [pid for pid in everyone if alive(pid)], lambda left: not left, timeout=15, what="all stopped"
    )

"""The supervisor's restart pauses, without processes.

A child that keeps dying waits 1, 2, 4 … 30 s before it is started again, and 1 s again once it
had run a minute; each death is logged with its cause.
"""

from __future__ import annotations

import itertools
import signal
from dataclasses import dataclass

import pytest

from atlaso_site import supervisor as serve


@dataclass
class Dead:
    """A process that has already ended."""

    pid: int
    returncode: int

    def poll(self) -> int:
        return self.returncode


def test_a_child_that_keeps_dying_is_started_again_with_a_doubling_pause_and_each_death_is_logged(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    clock = [0.0]
    starts: list[float] = []

    def start(child: serve.Child, now: float) -> None:
        child.process = Dead(pid=100 + len(starts), returncode=-signal.SIGKILL)  # type: ignore[assignment]
        child.started_at, child.due = now, None
        starts.append(now)

    monkeypatch.setattr(serve.Child, "start", start)
    monkeypatch.setattr(serve.Child, "signal_group", lambda child, sig: None)
    supervisor = serve.Supervisor({"worker": ["celery"]}, clock=lambda: clock[0])
    supervisor.start()
    for _ in range(30):  # every death is noticed at once, every restart when its pause is over
        supervisor.check()
        clock[0] = supervisor.children[0].due or clock[0]
    pauses = [later - earlier for earlier, later in itertools.pairwise(starts)]
    assert pauses[:7] == [1, 2, 4, 8, 16, 30, 30]
    log = capsys.readouterr().err
    assert "serve: worker (pid 100) was killed by SIGKILL; restart 1 in 1 s" in log
    assert "serve: started worker again (pid 101, restart 1)" in log

    # A child that ran a minute before it died waits 1 s again.
    child = supervisor.children[0]
    child.due = None
    child.started_at = clock[0] - serve.STEADY_SECONDS
    supervisor.check()
    assert child.due == clock[0] + serve.FIRST_DELAY


def test_a_child_that_exits_is_logged_with_its_exit_code():
    assert serve.how_it_ended(3) == "exited with code 3"
    assert serve.how_it_ended(-signal.SIGTERM) == "was killed by SIGTERM"

"""Hostile clients against the web server as `make run` starts it; each test prints its figures.

gunicorn with the project's worker and its own PostgreSQL: readers that never read, costly bodies
sent before any authority, bodies announced larger than anyone may send, unknown hosts, a database
that stops, and two servers on one host.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path

import pytest

from tests.faults.keys import make_keys
from tests.faults.processes import Atlaso, ThrowawayPostgres, free_port, wait_for
from tests.faults.slow_clients import measure

SLOW_READERS = 16
STATIC_FILE = "/static/ninja/redoc.standalone.js.map"  # about 3.3 MB
RECEIVE_BUFFER = 4096

MAKE_READER_KEYS = """
from beliefs.services import api_key_create
_, reader = api_key_create(name="reader", channel_name="dashboards", tier_name="agent_own", permissions=("read",))
_, confined = api_key_create(name="tenant-a", channel_name="tenant-a-app", tier_name="agent_own",
                             permissions=("read", "write"), user_prefix="tenant-a:")
result = {"reader": reader, "confined": confined}
"""

MAKE_SESSION = """
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore
user = User.objects.create_superuser("ops", password="a long enough password")
session = SessionStore()
session[SESSION_KEY] = str(user.pk)
session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
session[HASH_SESSION_KEY] = user.get_session_auth_hash()
session.create()
result = session.session_key
"""


def raw_request(
    port: int, head: str, body: bytes = b"", *, receive_buffer: int | None = None
) -> socket.socket:
    """A connection that has sent `head` (and `body`); the caller reads, or does not."""
    sock = socket.socket()
    if receive_buffer is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.connect(("127.0.0.1", port))
    sock.sendall(head.encode("latin-1") + body)
    return sock


def read_all(sock: socket.socket, *, timeout: float) -> tuple[bytes, str]:
    """Everything the server sends until it closes (or `timeout`), and how it ended."""
    sock.settimeout(timeout)
    parts, ended = [], "closed"
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            part = sock.recv(1 << 16)
            if not part:
                break
            parts.append(part)
        else:
            ended = "still open"
    except TimeoutError:
        ended = "still open"
    except ConnectionResetError:
        ended = "reset"
    finally:
        sock.close()
    return b"".join(parts), ended


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0


def workers_of(atlaso: Atlaso) -> list[int]:
    """The pids of gunicorn's workers (the web process's children)."""
    master = atlaso.processes["web"].pid
    return [int(pid) for pid in Path(f"/proc/{master}/task/{master}/children").read_text().split()]


def peak_rss_mib(pid: int) -> float:
    """The most memory `pid` has held since it started (VmHWM), MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmHWM for {pid}")


def files_open_under(pids: list[int], folder: Path) -> list[str]:
    """The files the processes hold open under `folder`, but gunicorn's own heartbeat files.

    Deleted temporary files included.
    """
    found = []
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith(str(folder)) and not Path(target).name.startswith("wgunicorn-"):
                found.append(target)
    return found


def test_readers_that_never_read_hold_no_request_slot_and_are_cut(
    atlaso: Atlaso, capsys: pytest.CaptureFixture[str]
):
    """Readers that never read hold no request slot, and the server cuts them.

    16 clients ask for a 3.3 MB file and 8 confined ones for a 2 MB recall of their own, with a 4 kB
    receive buffer, and never read: every other request is still answered quickly, and the server
    closes the stalled ones itself after WEB_SEND_TIMEOUT.
    """
    atlaso.extra_env.update(WEB_SEND_TIMEOUT="5")
    collected = atlaso.manage("collectstatic", "--no-input", "-v", "0")
    assert collected.returncode == 0, collected.stderr[-2000:]
    agent, _ = make_keys(atlaso)
    confined = atlaso.django(MAKE_READER_KEYS)["confined"]
    atlaso.start_web()
    items = [
        {"content": f"kept note {i} " + "word " * 1500, "idempotency_key": f"note-{i}", "polarity": "open"}
        for i in range(250)
    ]
    assert (
        atlaso.call("POST", "/users/tenant-a:big/deposits/bulk", {"items": items}, key=confined).status == 200
    )
    recall = "/api/v1/users/tenant-a:big/recall?q=kept&limit=250"
    readers = [
        raw_request(
            atlaso.port,
            f"GET {STATIC_FILE} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
            receive_buffer=RECEIVE_BUFFER,
        )
        for _ in range(SLOW_READERS)
    ] + [
        raw_request(
            atlaso.port,
            f"GET {recall} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {confined}\r\n\r\n",
            receive_buffer=RECEIVE_BUFFER,
        )
        for _ in range(SLOW_READERS // 2)
    ]
    time.sleep(1.0)  # every answer started and stalled
    timings = measure("127.0.0.1", atlaso.port, seconds=4.0, key=agent, timeout=5)
    started = time.monotonic()
    endings = [read_all(sock, timeout=20) for sock in readers]
    cut_after = time.monotonic() - started
    whole = sum(1 for answer, _ in endings if len(answer) >= 3_300_000)
    with capsys.disabled():
        print(f"\n[slow readers] {len(readers)} never-reading connections; {timings.line()}")
        print(
            f"[slow readers] the server cut {len(readers) - whole} of them, all within {cut_after + 5:.0f} s"
        )

    assert timings.failures == [], timings.failures[:5]
    assert len(timings.seconds) >= 20 and timings.percentile(0.99) < 1.0, timings.line()
    assert [ended for _, ended in endings] == ["closed"] * len(readers) or all(
        ended in {"closed", "reset"} for _, ended in endings
    ), endings
    assert whole == 0, "a reader that never read got its whole answer: nothing cut it"
    assert "read nothing of its answer for 5 s" in atlaso.log("web")


@pytest.mark.parametrize("who", ["reader", "confined"])
def test_a_bulk_of_zeros_from_a_key_that_may_not_write_there_is_403_at_once_with_memory_flat(
    atlaso: Atlaso, capsys: pytest.CaptureFixture[str], who: str
):
    keys = atlaso.django(MAKE_READER_KEYS)
    atlaso.start_web()
    user = "tenant-b:bob" if who == "confined" else "alice"
    zeros = b'{"items": [' + b",".join([b"0"] * (2 * 1024 * 1024)) + b"]}"  # 4 MiB, 2M values
    workers = workers_of(atlaso)
    before = {pid: peak_rss_mib(pid) for pid in workers}
    answers: list[tuple[int, float]] = []

    def send() -> None:
        started = time.monotonic()
        head = (
            f"POST /api/v1/users/{user}/deposits/bulk HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {keys[who]}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(zeros)}\r\n\r\n"
        )
        answer, _ = read_all(raw_request(atlaso.port, head, zeros), timeout=30)
        answers.append((status_of(answer), time.monotonic() - started))

    threads = [threading.Thread(target=send) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    after = {pid: peak_rss_mib(pid) for pid in workers}
    grown = max(after[pid] - before[pid] for pid in workers)
    with capsys.disabled():
        print(
            f"\n[bulk of zeros, {who} key] 4 at once: {sorted(answers)}; the workers' peak memory "
            f"{before} -> {after} MiB (grown at most {grown:.1f})"
        )
    assert [status for status, _ in answers] == [403] * 4, answers
    assert max(seconds for _, seconds in answers) < 1.0, answers
    assert grown < 30, (before, after)
    assert workers_of(atlaso) == workers  # none killed


def test_a_bulk_of_zeros_from_a_writer_is_refused_by_its_shape_at_once(
    atlaso: Atlaso, capsys: pytest.CaptureFixture[str]
):
    agent, _ = make_keys(atlaso)
    atlaso.start_web()
    zeros = b'{"items": [' + b",".join([b"0"] * (2 * 1024 * 1024)) + b"]}"
    workers = workers_of(atlaso)
    before = {pid: peak_rss_mib(pid) for pid in workers}
    started = time.monotonic()
    head = (
        f"POST /api/v1/users/alice/deposits/bulk HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {agent}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(zeros)}\r\nConnection: close\r\n\r\n"
    )
    answer, _ = read_all(raw_request(atlaso.port, head, zeros), timeout=30)
    took = time.monotonic() - started
    grown = max(peak_rss_mib(pid) - before[pid] for pid in workers)
    with capsys.disabled():
        print(
            f"\n[bulk of zeros, write key] {status_of(answer)} in {took * 1000:.0f} ms; peak memory +{grown:.1f} MiB"
        )
    assert status_of(answer) == 422 and b"2,097,152 JSON values" in answer, answer[-400:]
    assert took < 1.0
    assert grown < 30


@pytest.mark.parametrize(
    ("what", "head", "status"),
    [
        (
            "login page",
            "POST /accounts/login/ HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\n",
            413,
        ),
        (
            "API without a key",
            "POST /api/v1/users/alice/deposits/bulk HTTP/1.1\r\nContent-Type: application/json\r\n",
            401,
        ),
    ],
)
def test_a_40_mb_body_announced_before_any_authority_is_refused_unread(
    atlaso: Atlaso, capsys: pytest.CaptureFixture[str], what: str, head: str, status: int
):
    temporary = atlaso.folder / "tmp"
    temporary.mkdir()
    atlaso.extra_env.update(TMPDIR=str(temporary))
    atlaso.start_web()
    started = time.monotonic()
    sock = raw_request(
        atlaso.port, head + "Host: 127.0.0.1\r\nContent-Length: 40000000\r\n\r\n", b"x" * (2 * 1024 * 1024)
    )
    time.sleep(0.5)
    held_open = files_open_under(workers_of(atlaso), temporary)
    answer, _ = read_all(sock, timeout=10)
    took = time.monotonic() - started
    with capsys.disabled():
        print(
            f"\n[40 MB announced, {what}] {status_of(answer)} after {took:.2f} s; files under TMPDIR: {held_open}"
        )
    assert status_of(answer) == status, answer[:300]
    assert took < 5
    assert held_open == [] and list(temporary.iterdir()) == []


def test_an_unknown_host_is_a_400_logged_as_one_line(atlaso: Atlaso):
    atlaso.start_web()
    for path in ("/", "/accounts/login/", "/api/v1/tiers"):
        answer, _ = read_all(
            raw_request(
                atlaso.port, f"GET {path} HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n"
            ),
            timeout=10,
        )
        assert status_of(answer) == 400, answer[:500]
    log = atlaso.log("web")
    assert "Traceback" not in log, log[-3000:]
    assert log.count("Invalid HTTP_HOST header: 'evil.example'") == 3


def test_with_the_database_stopped_docs_and_api_answer_503_within_two_seconds(
    atlaso: Atlaso, cluster: ThrowawayPostgres, capsys: pytest.CaptureFixture[str]
):
    agent, _ = make_keys(atlaso)
    session = atlaso.django(MAKE_SESSION)
    atlaso.start_web()
    cookie = {"Cookie": f"sessionid={session}"}
    assert atlaso.call("GET", "/docs", headers=cookie).status == 200
    assert atlaso.call("GET", "/tiers", key=agent).status == 200
    cluster.stop()
    try:
        first = []
        for _ in range(4):
            started = time.monotonic()
            answer = atlaso.call("GET", "/tiers", key=agent, timeout=15)
            first.append((answer.status, answer.headers.get("retry-after"), time.monotonic() - started))
        docs = atlaso.call("GET", "/docs", headers=cookie, timeout=15)
    finally:
        cluster.start()
    with capsys.disabled():
        print(f"\n[database stopped] API answers (status, Retry-After, seconds): {first}")
    assert all(status == 503 and retry == "5" for status, retry, _ in first), first
    assert max(seconds for _, _, seconds in first) < 2.5, first
    assert docs.status == 503 and docs.headers.get("retry-after") == "5", docs
    assert "Database unavailable" in docs.body.get("not_json", ""), docs.body
    assert "Traceback" not in atlaso.log("web")
    wait_for(
        lambda: atlaso.call("GET", "/tiers", key=agent).status,
        lambda s: s == 200,
        timeout=30,
        what="recovery",
    )


def test_two_servers_on_one_host_each_serve_and_open_no_control_socket(atlaso: Atlaso, tmp_path: Path):
    home = tmp_path / "home"
    runtime = tmp_path / "runtime"
    home.mkdir()
    runtime.mkdir()
    shared = {"HOME": str(home), "XDG_RUNTIME_DIR": str(runtime)}
    atlaso.extra_env.update(shared)
    other = Atlaso(tmp_path / "other", database_url=atlaso.database_url, extra_env=dict(shared))
    (tmp_path / "other").mkdir()
    agent, _ = make_keys(atlaso)
    atlaso.start_web()
    other.start_web()
    try:
        assert other.port != atlaso.port != free_port()
        assert atlaso.call("GET", "/tiers", key=agent).status == 200
        assert other.call("GET", "/tiers", key=agent).status == 200
        sockets = [str(path) for path in (*home.rglob("*.ctl"), *runtime.rglob("*.ctl"))]
        assert sockets == [], sockets
        atlaso.stop_all()
        assert other.call("GET", "/tiers", key=agent).status == 200
    finally:
        other.stop_all()
    assert json.dumps(sockets) == "[]"

"""A whole memory through the client against a served Atlaso (portability.md).

Export, iter_export, import_ and forget, sync and async; the CLI's export, import (its progress
bar on a terminal) and forget; mem0's export recalled; an import cut short (the connection, the
worker) run again; a body sent to another tenant refused before it is read; and, measured, the
web worker's memory while a 200 MB export and its import stream through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import io
import json
import os
import pty
import random
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from atlaso import AsyncMemory, InputValidationError, Memory, PermissionDeniedError
from atlaso.cli import main
from tests.client.served import ROOT, ServedAtlaso

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SCOPE = {"model": "gpt-5", "dataset": "evals", "env": "prod"}


@pytest.fixture(scope="module")
def admin_key(served: ServedAtlaso) -> str:
    """A key that keeps each imported line's channel (it holds admin) and may forget (erase)."""
    return served.make_key("client-mover", "read", "write", "erase", "admin")


@pytest.fixture
def mover(served: ServedAtlaso, admin_key: str) -> Iterator[Memory]:
    with Memory(base_url=served.url, api_key=admin_key, timeout=30) as memory:
        yield memory


def _memory_of(m: Memory, owner: str) -> list[str]:
    """A small memory: claims in one bag, a correction retracted, an erasure, a belief."""
    user = m.for_user(owner)
    first = user.add("the lamp is trimmed at dusk", polarity="positive", evidence_grade="verified",
                     artifact_refs=["s3://log/1"], scope=SCOPE, idempotency_key=f"{owner}-1")  # fmt: skip
    second = user.add("the lamp is never trimmed", polarity="negative", evidence_grade="verified",
                      artifact_refs=["s3://log/2"], scope=SCOPE)  # fmt: skip
    fix = user.contradict("the lamp is trimmed on Sundays", [second], reason="asked the keeper",
                          polarity="positive", evidence_grade="verified", artifact_refs=["s3://log/3"])  # fmt: skip
    user.retract(fix.id, reason="the keeper misspoke")
    gone = user.add("the spare wicks are in the attic", idempotency_key=f"{owner}-gone")
    user.retract(gone.id, reason="erase it", hard_delete=True)
    user.add("takes oat milk", belief={"key": "diet.milk", "value": "oat"})
    return [first.id, second.id, fix.id]


def _counts(m: Memory, owner: str) -> tuple[int, int]:
    page = m.for_user(owner).list_recent(limit=1, include_retracted=True)
    bags = m.for_user(owner).bags(limit=50)
    return page.total, len(bags.items)


def test_export_then_import_moves_a_memory_whole_and_a_second_import_writes_nothing(mover, tmp_path):
    owner, copy = f"from-{uuid.uuid4().hex[:8]}", f"to-{uuid.uuid4().hex[:8]}"
    ids = _memory_of(mover, owner)
    header = mover.for_user(owner).export(tmp_path / "memory.jsonl.gz")
    assert header.counts == {"deposits": 4, "edges": 1, "retractions": 1, "observations": 1, "outcomes": 0}
    assert not (tmp_path / "memory.jsonl.gz.part").exists()
    lines = gzip.decompress((tmp_path / "memory.jsonl.gz").read_bytes()).decode().splitlines()
    assert len(lines) == header.lines == 8
    assert [line["kind"] for line in mover.for_user(owner).iter_export()] == json_kinds(lines)
    dry = mover.for_user(copy).import_(tmp_path / "memory.jsonl.gz", dry_run=True)
    assert dry.dry_run and dry.deposits.committed == 4 and _counts(mover, copy) == (0, 0)
    result = mover.for_user(copy).import_(tmp_path / "memory.jsonl.gz")
    assert (result.deposits.committed, result.edges.committed, result.retractions.committed) == (4, 1, 1)
    assert result.observations.committed == 1 and not result.failed_lines
    assert _counts(mover, copy) == _counts(mover, owner)
    again = mover.for_user(copy).import_(tmp_path / "memory.jsonl.gz")
    assert again.committed == 0 and again.deposits.duplicates == 4
    original = mover.for_user(owner).recall("lamp trimmed")
    moved = mover.for_user(copy).recall("lamp trimmed")
    assert [hit.content for hit in moved] == [hit.content for hit in original]
    assert (moved.has_disagreement, moved.is_confident) == (original.has_disagreement, original.is_confident)
    assert mover.for_user(copy).belief("diet.milk").fact == "oat"
    assert ids[0] not in {hit.id for hit in moved}  # another owner's ids: the copy's are new


def json_kinds(lines: list[str]) -> list[str]:
    return [json.loads(line)["kind"] for line in lines]


def test_the_async_client_exports_imports_and_forgets_the_same(served, admin_key, tmp_path):
    owner, copy = f"async-{uuid.uuid4().hex[:8]}", f"async-copy-{uuid.uuid4().hex[:8]}"
    with Memory(base_url=served.url, api_key=admin_key) as m:
        _memory_of(m, owner)

    async def scenario() -> tuple[object, ...]:
        async with AsyncMemory(base_url=served.url, api_key=admin_key) as am:
            header = await am.for_user(owner).export(tmp_path / "a.jsonl")
            kinds = [line["kind"] async for line in am.for_user(owner).iter_export(include_retracted=False)]
            result = await am.for_user(copy).import_(tmp_path / "a.jsonl")
            forgotten = await am.for_user(copy).forget(confirm=copy)
            return header, kinds, result, forgotten

    header, kinds, result, forgotten = asyncio.run(scenario())
    assert header.counts["deposits"] == 4  # type: ignore[attr-defined]
    assert kinds == ["atlaso_export", "deposit", "deposit", "deposit", "observation"]
    assert result.deposits.committed == 4  # type: ignore[attr-defined]
    assert forgotten.deposits == 4 and forgotten.user_id == copy  # type: ignore[attr-defined]
    with Memory(base_url=served.url, api_key=admin_key) as m:
        assert _counts(m, copy) == (0, 0)


def test_forget_needs_the_id_typed_again_and_the_erase_permission(served, mover):
    owner = f"forget-{uuid.uuid4().hex[:8]}"
    _memory_of(mover, owner)
    with pytest.raises(InputValidationError) as refused:
        mover.for_user(owner).forget(confirm="someone-else")
    assert refused.value.field == "confirm"
    with (
        Memory(base_url=served.url, api_key=served.keys["client-rw"]) as writer,
        pytest.raises(PermissionDeniedError),
    ):
        writer.for_user(owner).forget(confirm=owner)
    result = mover.for_user(owner).forget(confirm=owner)
    assert (result.deposits, result.edges, result.keys_tombstoned) == (4, 1, 5)  # the client keys every add
    assert _counts(mover, owner) == (0, 0)


def test_a_mem0_export_is_recalled_through_the_client(mover):
    owner = f"mem0-{uuid.uuid4().hex[:8]}"
    result = mover.for_user(owner).import_(FIXTURES / "mem0_export.json", format="mem0")
    assert result.deposits.committed == 4 and not result.failed_lines
    hits = mover.for_user(owner).recall("Nagoya")
    assert [hit.content for hit in hits] == ["Moved from Lyon to Nagoya (名古屋) in 2024"]
    hit = hits[0]
    assert hit.polarity == "open" and hit.evidence_grade == "anecdotal"
    assert set(hit.tags) == {"mem0:place=名古屋", "mem0:source=onboarding"}
    assert hit.deposit.artifact_refs == ("mem0:7f6e3a2c-1b0d-4e8f-9a7b-2c3d4e5f6a02",)
    assert mover.for_user(owner).recall("café")[0].content == "Runs the café on Rue de Rivoli on Saturdays ☕"
    assert (
        mover.for_user(owner).import_(FIXTURES / "mem0_export.json", format="mem0").deposits.duplicates == 4
    )


# --- The CLI ---------------------------------------------------------------------------------


def atlaso(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_the_cli_exports_imports_and_forgets(served, admin_key, mover, tmp_path, monkeypatch):
    owner, copy = f"cli-{uuid.uuid4().hex[:8]}", f"cli-copy-{uuid.uuid4().hex[:8]}"
    _memory_of(mover, owner)
    monkeypatch.setenv("ATLASO_BASE_URL", served.url)
    monkeypatch.setenv("ATLASO_API_KEY", admin_key)
    code, out, err = atlaso("export", owner, "-o", str(tmp_path / "m.jsonl"))
    assert code == 0, err
    assert (
        err
        == f"exported {owner} to {tmp_path / 'm.jsonl'}: 4 deposits, 1 edge, 1 retraction, 1 observation, 0 outcomes\n"
    )
    code, out, err = atlaso("import", copy, str(tmp_path / "m.jsonl"), "--dry-run")
    assert (
        code == 0 and out.startswith(f"would import into {copy}") and re.search(r"deposits\s+4 new", out)
    ), out
    code, out, err = atlaso("import", copy, str(tmp_path / "m.jsonl"), "--json")
    assert code == 0 and json.loads(out)["deposits"] == {"committed": 4, "duplicates": 0, "failed": 0}
    assert err == ""  # no progress bar off a terminal, nor with --json
    code, out, err = atlaso("forget", copy)
    assert code == 2 and "--yes" in err
    code, out, err = atlaso("forget", copy, "--yes")
    assert code == 0 and out.startswith(f"forgot {copy}: 4 deposits, 1 edge, 1 observation")
    assert _counts(mover, copy) == (0, 0)


def test_the_cli_says_every_failed_line_and_exits_1_for_any(served, admin_key, mover, tmp_path, monkeypatch):
    """Lines of no kind are in no kind's count; the CLI still counts them, and fails for them."""
    owner = f"cli-bad-{uuid.uuid4().hex[:8]}"
    _memory_of(mover, owner)
    monkeypatch.setenv("ATLASO_BASE_URL", served.url)
    monkeypatch.setenv("ATLASO_API_KEY", admin_key)
    assert atlaso("export", owner, "-o", str(tmp_path / "m.jsonl"))[0] == 0
    lines = (tmp_path / "m.jsonl").read_text().splitlines()
    lines[2] = lines[2][: len(lines[2]) // 2]  # a deposit line cut in half
    lines.append('{"kind": "bogus"}')
    (tmp_path / "bad.jsonl").write_text("\n".join(lines) + "\n")

    code, out, err = atlaso("import", f"{owner}-copy", str(tmp_path / "bad.jsonl"))

    assert code == 1, (out, err)
    assert re.search(r"other lines\s+2 failed", out), out
    assert "line 3: validation_error: the line is not JSON" in err
    assert "'bogus' is not a kind of line" in err
    code, out, _ = atlaso("import", f"{owner}-copy", str(tmp_path / "bad.jsonl"), "--json")
    # The two of no kind, and any line that names the deposit cut in half (which one it is
    # depends on the export's order).
    assert code == 1 and {3, len(lines)} <= {f["line"] for f in json.loads(out)["failed_lines"]}


def test_the_cli_names_a_missing_file_or_folder_and_takes_no_abbreviation(
    served, admin_key, tmp_path, monkeypatch
):
    monkeypatch.setenv("ATLASO_BASE_URL", served.url)
    monkeypatch.setenv("ATLASO_API_KEY", admin_key)
    missing = tmp_path / "nowhere.jsonl"
    assert atlaso("import", "cli-none", str(missing)) == (
        1,
        "",
        f"atlaso import: No such file or directory: {missing}\n",
    )
    into = tmp_path / "no-folder" / "x.jsonl"
    assert atlaso("export", "cli-none", "-o", str(into)) == (
        1,
        "",
        f"atlaso export: No such file or directory: {into}\n",
    )
    with pytest.raises(SystemExit) as usage:
        atlaso("forget", "cli-none", "--y")  # not taken for --yes
    assert usage.value.code == 2


def test_the_cli_import_shows_a_progress_bar_on_a_terminal(served, admin_key, tmp_path):
    """`atlaso import` under a pseudo-terminal draws rich's bar: lines, deposits/s, time left."""
    path = tmp_path / "many.jsonl"
    write_export(path, deposits=3000, content_size=120)
    env = {**os.environ, "ATLASO_BASE_URL": served.url, "ATLASO_API_KEY": admin_key, "COLUMNS": "120"}
    owner = f"bar-{uuid.uuid4().hex[:8]}"
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "atlaso", "import", owner, str(path)],
        stdin=follower, stdout=follower, stderr=follower, env=env, cwd=ROOT,
    )  # fmt: skip
    os.close(follower)
    seen = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    process.wait(timeout=60)
    text = seen.decode("utf-8", "replace")
    assert process.returncode == 0, text
    assert "importing into" in text and "3,001 lines" in text and "deposits/s" in text, text
    assert re.search(r"deposits\s+3,000 new", text), text


# --- Cut short, run again --------------------------------------------------------------------


def write_export(
    path: Path,
    *,
    deposits: int,
    content_size: int,
    owner: str = "generated",
    seed: int = 5,
    vocabulary: int = 4000,
) -> int:
    """An atlaso-export file of `deposits` claims; returns its size in bytes.

    Open and directional claims, in bags of about 25, each about `content_size` characters of
    `vocabulary` words.
    """
    rng = random.Random(seed)
    words = [f"w{n}" for n in range(vocabulary)] + ["lighthouse", "harbour", "lamp", "keeper", "tide"]
    # A pool of texts drawn once: drawing every word of 200 MB of claims would take minutes.
    pool = []
    for _ in range(4096):
        text: list[str] = []
        while sum(len(w) + 1 for w in text) < content_size:
            text.append(rng.choice(words))
        pool.append(" ".join(text))
    header = {
        "kind": "atlaso_export", "version": 1, "user_id": owner, "exported_at": "2026-01-01T00:00:00+00:00",
        "server_version": "test", "counts": {"deposits": deposits, "edges": 0, "retractions": 0,
                                             "observations": 0, "outcomes": 0},
    }  # fmt: skip
    with open(path, "w", encoding="utf-8") as out:
        out.write(json.dumps(header) + "\n")
        for n in range(deposits):
            polarity = rng.choice(["open", "open", "positive", "negative"])
            line = {
                "kind": "deposit", "id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                "content": f"claim {n}: {pool[rng.randrange(len(pool))]}", "polarity": polarity,
                "evidence_grade": "observed", "artifact_refs": ["s3://gen/1"],
                "scope": {"model": f"m{n // 25 % 400}", "dataset": "gen", "env": "prod"},
                "created_at": f"2025-{1 + n % 12:02d}-{1 + n % 28:02d}T12:00:00.{n % 1000000:06d}+00:00",
            }  # fmt: skip
            out.write(json.dumps(line) + "\n")
    return path.stat().st_size


def _workers(served: ServedAtlaso) -> list[int]:
    assert served.process is not None
    web = served.process.pid
    return [int(pid) for pid in Path(f"/proc/{web}/task/{web}/children").read_text().split()]


def _rss_mib(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no {field} for {pid}")


def _stored(m: Memory, owner: str) -> int:
    return m.for_user(owner).list_recent(limit=1).total


def test_an_import_cut_short_by_a_lost_connection_then_run_again_holds_one_copy(
    served, admin_key, mover, tmp_path
):
    path = tmp_path / "cut.jsonl"
    write_export(path, deposits=12000, content_size=200, seed=7)
    owner = f"cut-{uuid.uuid4().hex[:8]}"
    body = path.read_bytes()
    # The first half of the body, then the connection closed.
    with socket.create_connection(("127.0.0.1", served.port)) as raw:
        raw.sendall(
            f"POST /api/v1/users/{owner}/import HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {admin_key}\r\n"
            f"Content-Type: application/x-ndjson\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        )
        raw.sendall(body[: len(body) // 2])
        time.sleep(3)  # the server reads and writes what arrived
    written = _settled(mover, owner)
    assert 0 < written < 12000, written
    result = mover.for_user(owner).import_(path)
    assert result.deposits.committed + result.deposits.duplicates == 12000
    assert result.deposits.duplicates == written
    assert _stored(mover, owner) == 12000
    assert len({hit["content"] for hit in _all_lines(mover, owner)}) == 12000


def _settled(m: Memory, owner: str) -> int:
    """The owner's deposits once the server has written what it read (the count holds for 2 s)."""
    deadline = time.monotonic() + 60
    last, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        now = _stored(m, owner)
        if now != last:
            last, since = now, time.monotonic()
        elif now and time.monotonic() - since >= 2:
            return now
        time.sleep(0.2)
    return last


def _all_lines(m: Memory, owner: str) -> list[dict]:
    return [line for line in m.for_user(owner).iter_export() if line["kind"] == "deposit"]


def test_an_import_whose_worker_is_killed_then_run_again_holds_one_copy(served, admin_key, mover, tmp_path):
    path = tmp_path / "killed.jsonl"
    write_export(path, deposits=40000, content_size=200, seed=11)
    owner = f"killed-{uuid.uuid4().hex[:8]}"
    failure: list[BaseException] = []

    def send() -> None:
        with Memory(base_url=served.url, api_key=admin_key, max_retries=0, timeout=60) as once:
            try:
                once.for_user(owner).import_(path)
            except Exception as error:
                failure.append(error)

    sender = threading.Thread(target=send)
    sender.start()
    deadline = time.monotonic() + 120
    while _stored(mover, owner) < 5000 and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in _workers(served):
        os.kill(pid, signal.SIGKILL)
    sender.join(timeout=120)
    assert failure, "the import finished before its worker was killed"
    _wait_for_workers(served)
    written = _settled(mover, owner)
    assert 0 < written < 40000, written
    result = mover.for_user(owner).import_(path)
    assert result.deposits.duplicates == written and not result.failed_lines
    assert _stored(mover, owner) == 40000
    assert len({line["id"] for line in _all_lines(mover, owner)}) == 40000


def _wait_for_workers(served: ServedAtlaso) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if (
                httpx.get(f"{served.url}/api/v1/tiers", timeout=2).status_code == 401
                and len(_workers(served)) >= 2
            ):
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise AssertionError("gunicorn did not start its workers again")


def test_a_2_gb_body_to_another_tenant_is_refused_before_it_is_read(served):
    tenant = served.keys["client-tenant"]
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as raw:
        started = time.monotonic()
        raw.sendall(
            f"POST /api/v1/users/alice/import HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {tenant}\r\n"
            f"Content-Type: application/x-ndjson\r\nContent-Length: {2 * 1024**3}\r\n\r\n".encode()
        )
        raw.sendall(b'{"kind": "atlaso_export", "version": 1}\n' + b"x" * 65536)
        answer = raw.recv(65536).decode("utf-8", "replace")
        took = time.monotonic() - started
        while chunk := raw.recv(65536):
            answer += chunk.decode("utf-8", "replace")
    assert answer.startswith("HTTP/1.1 403"), answer
    assert '"code": "forbidden"' in answer and "tenant-a:" in answer
    assert took < 2, took


# --- Memory flat ------------------------------------------------------------------------------


class _Sampler:
    """The workers' resident memory, sampled every 50 ms while a transfer runs."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.before = {pid: _rss_mib(pid) for pid in pids}
        self.peak = dict(self.before)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            for pid in self.pids:
                with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                    self.peak[pid] = max(self.peak[pid], _rss_mib(pid))

    def __enter__(self) -> _Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def grown(self) -> float:
        return max(self.peak[pid] - self.before[pid] for pid in self.pids)


@pytest.mark.once
@pytest.mark.skipif(
    not os.environ.get("DATABASE_URL"),
    reason="needs PostgreSQL (DATABASE_URL): 200 MB through SQLite takes minutes",
)
def test_a_200_mb_import_and_its_export_stream_through_the_web_worker_in_flat_memory(
    served, admin_key, mover, tmp_path, figures
):
    path = tmp_path / "big.jsonl"
    # Few distinct words: the bytes are what the worker's memory is measured against, and the
    # database's text indexes (a lexeme per word and deposit) would only make the run long.
    size = write_export(path, deposits=200_000, content_size=980, seed=13, vocabulary=12)
    assert size > 200 * 1024**2, size
    owner = f"big-{uuid.uuid4().hex[:8]}"
    _wait_for_workers(served)
    workers = _workers(served)
    started = time.monotonic()
    with _Sampler(workers) as importing:
        result = mover.for_user(owner).import_(path)
    import_seconds = time.monotonic() - started
    assert result.deposits.committed == 200_000 and not result.failed_lines
    started = time.monotonic()
    with _Sampler(workers) as exporting:
        header = mover.for_user(owner).export(tmp_path / "back.jsonl")
    export_seconds = time.monotonic() - started
    exported = (tmp_path / "back.jsonl").stat().st_size
    assert header.counts["deposits"] == 200_000 and exported > 200 * 1024**2
    figures(
        f"[200 MB] import of {size / 1024**2:.0f} MB ({200_000:,} deposits) in {import_seconds:.1f} s "
        f"({200_000 / import_seconds:,.0f} deposits/s): the web workers' resident memory grew at most "
        f"{importing.grown:.1f} MiB; export of {exported / 1024**2:.0f} MB in {export_seconds:.1f} s "
        f"({200_000 / export_seconds:,.0f} deposits/s): grew at most {exporting.grown:.1f} MiB"
    )
    # Flat: never the body or the answer, only what is in flight: for the import, a batch (at
    # most 4 MiB of lines) being read ahead, one waiting, three being written, with their objects;
    # for the export, a chunk of rows and a 64 kB piece. The body is 243 MB.
    assert importing.grown < 128, importing.grown
    assert exporting.grown < 32, exporting.grown

"""`bench_portability`: an owner's export and import through gunicorn, beside bulk ingest.

It runs as `make run` serves it, beside bulk ingest in the same run, with the web worker's memory
sampled throughout.

The owner measured (the store's largest bench owner, or the one closest to a size) is exported
through `GET /users/{id}/export` to a file, which is then imported through `POST
/users/{id}/import` into a new owner (every id taken: each deposit gets a new one and its source
is remembered), and once more into it (every line a duplicate); then the owner is forgotten and
imports its file back, `rounds` times. The new owner is forgotten afterwards, timed, so the store
is left as it was.

The ratio that counts (import ÷ bulk ingest) is read round by round: each import back is run
between two bulk ingests (ABAB…), and each is set against the mean of the two beside it, so both
sides of a ratio meet the same load on a shared machine. The tables a forget or an ingest's
clean-up left dead rows in are vacuumed before each measurement (PostgreSQL runs here with
autovacuum off): without it each later step would meet every earlier one's dead index entries.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from django.db import connection

from atlaso_site.bench.concurrent_recall import gunicorn
from atlaso_site.bench.ingest import delete_ingested, ingest, ingest_batches
from beliefs.services import api_key_create, api_key_revoke
from deposits.models import Deposit
from diagnostics.forget import owner_forget

IMPORT_PREFIX = "benchport-"
INGEST_LABEL = "bulk ingest through the service (bench's batches of 1,000)"
IMPORT_BACK_LABEL = "import it back (every id free, as into a fresh database)"
# The tables a forget, an import or an ingest's clean-up leaves dead rows in.
TOUCHED = (
    "deposits_deposit", "deposits_embeddingpending", "deposits_idempotencyentry", "deposits_conflictcopy",
    "deposits_scopebag", "deposits_bagterms", "deposits_conflictepisode", "deposits_contradiction",
    "deposits_importedrow", "deposits_ownertally", "deposits_deploymenttally",
    "deposits_depositvector", "deposits_vectorhead",
)  # fmt: skip


def vacuum_touched() -> None:
    """VACUUM what the last step left dead, so the next meets the store as the first did.

    Then a CHECKPOINT: a forget and an import each write hundreds of MB of WAL, and a checkpoint
    that falls inside the next step (every 1 GB with PostgreSQL's defaults) costs it whole seconds
    of writes that are the step before's.
    """
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM {', '.join(TOUCHED)}")
        cursor.execute("CHECKPOINT")


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _cpu_seconds(pid: int) -> float:
    """The process's user and system CPU time so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def workers_of(master: int) -> list[int]:
    """gunicorn's worker processes (its master's children)."""
    return [int(pid) for pid in Path(f"/proc/{master}/task/{master}/children").read_text().split()]


def _workers_when_up(master: int, count: int) -> list[int]:
    deadline = time.monotonic() + 30
    while len(pids := workers_of(master)) < count and time.monotonic() < deadline:
        time.sleep(0.1)
    return pids


@dataclass
class Sampler:
    """The workers' resident memory and CPU time while a transfer runs.

    Their memory is sampled every 50 ms while it runs (kept: before, and the peak), and the CPU time
    they spent on it counted.
    """

    pids: list[int]
    before: dict[int, float] = field(default_factory=dict)
    peak: dict[int, float] = field(default_factory=dict)
    cpu: float = 0.0

    def __post_init__(self) -> None:
        self.before = {pid: _rss_mib(pid) for pid in self.pids}
        self.peak = dict(self.before)
        self._cpu_before = sum(_cpu_seconds(pid) for pid in self.pids)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            for pid in self.pids:
                self.peak[pid] = max(self.peak[pid], _rss_mib(pid))

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.cpu = sum(_cpu_seconds(pid) for pid in self.pids) - self._cpu_before

    @property
    def baseline(self) -> float:
        return max(self.before.values())

    @property
    def highest(self) -> float:
        return max(self.peak.values())

    @property
    def grown(self) -> float:
        return max(self.peak[pid] - self.before[pid] for pid in self.pids)


@dataclass(frozen=True)
class Measured:
    what: str
    deposits: int
    seconds: float
    memory: Sampler | None = None
    note: str = ""

    @property
    def rate(self) -> float:
        return self.deposits / self.seconds if self.seconds else 0.0

    def row(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "what": self.what, "deposits": self.deposits, "seconds": round(self.seconds, 2),
            "deposits_per_second": round(self.rate), "note": self.note,
        }  # fmt: skip
        if self.memory is not None:
            out |= {
                "worker_rss_before_mib": round(self.memory.baseline, 1),
                "worker_rss_peak_mib": round(self.memory.highest, 1),
                "worker_rss_grown_mib": round(self.memory.grown, 1),
                "worker_cpu_seconds": round(self.memory.cpu, 2),
            }
        return out


def bulk_ingest(total: int) -> Measured:
    """Bulk ingest through the service, as `bench` measures it, on the same store."""
    batches = ingest_batches(total, run=f"port-{uuid.uuid4().hex[:6]}")
    cpu = time.process_time()
    started = time.perf_counter()
    ingest(batches)
    seconds = time.perf_counter() - started
    cpu = time.process_time() - cpu
    delete_ingested()
    vacuum_touched()
    return Measured(INGEST_LABEL, total, seconds, note=f"this process's CPU {cpu:.1f} s")


def measure(owner: str, *, ingest_total: int, workers: int = 1, rounds: int = 1) -> list[Measured]:
    """Bulk ingest, the owner's export through gunicorn and its imports, and bulk ingest again.

    The export is imported into a new owner (every id taken) and again (every line a duplicate),
    then the owner is forgotten and its export imported back into it (every id free, as into a
    fresh database), and bulk ingest runs again; the new owner is forgotten afterwards, so the store
    is left as it was.
    """
    vacuum_touched()
    results = [bulk_ingest(ingest_total)]
    deposits = Deposit.objects.filter(user_id=owner).count()
    key, secret = api_key_create(
        name="bench portability",
        channel_name="bench-portability",
        permissions=["read", "write", "erase", "admin"],
    )
    copy = f"{IMPORT_PREFIX}{uuid.uuid4().hex[:6]}"
    folder = Path(tempfile.mkdtemp(prefix="bench-portability-"))
    exported = folder / f"{owner}.jsonl"
    try:
        masters: list[int] = []
        with gunicorn(workers, started=masters.append) as url:
            pids = _workers_when_up(masters[0], workers)
            headers = {"Authorization": f"Bearer {secret}"}
            with httpx.Client(base_url=url, headers=headers, timeout=httpx.Timeout(60, read=3600)) as http:
                http.get("/api/v1/keys/me").raise_for_status()  # each worker warm
                with Sampler(pids) as memory:
                    started = time.perf_counter()
                    with (
                        http.stream(
                            "GET", f"/api/v1/users/{owner}/export", headers={"Accept-Encoding": "identity"}
                        ) as response,
                        open(exported, "wb") as out,
                    ):
                        response.raise_for_status()
                        for chunk in response.iter_raw():
                            out.write(chunk)
                    seconds = time.perf_counter() - started
                size = exported.stat().st_size
                results.append(
                    Measured(f"export through gunicorn ({size / 1024**2:,.0f} MB)", deposits, seconds, memory)
                )
                results.append(
                    _import(
                        http,
                        pids,
                        exported,
                        copy,
                        deposits,
                        "import into a new owner (every id taken: new ids, sources kept)",
                    )
                )
                results.append(
                    _import(
                        http, pids, exported, copy, deposits, "the same import again (every line a duplicate)"
                    )
                )
                # In turn with bulk ingest (B A B A … B), so each import meets the load of the
                # ingests on either side of it on a shared machine.
                for _ in range(rounds):
                    started = time.perf_counter()
                    forgotten = owner_forget(user_id=owner)
                    results.append(
                        Measured("forget the owner", forgotten.deposits, time.perf_counter() - started)
                    )
                    vacuum_touched()
                    results.append(bulk_ingest(ingest_total))
                    results.append(_import(http, pids, exported, owner, deposits, IMPORT_BACK_LABEL))
                    vacuum_touched()
                results.append(bulk_ingest(ingest_total))
    finally:
        api_key_revoke(key=key)
        exported.unlink(missing_ok=True)
        folder.rmdir()
        started = time.perf_counter()
        forgotten = owner_forget(user_id=copy)
        if forgotten.deposits:
            results.append(
                Measured("forget the new owner", forgotten.deposits, time.perf_counter() - started)
            )
    return results


def _import(
    http: httpx.Client, pids: list[int], exported: Path, owner: str, deposits: int, label: str
) -> Measured:
    size = exported.stat().st_size
    with Sampler(pids) as memory, open(exported, "rb") as body:
        started = time.perf_counter()
        answer = http.post(
            f"/api/v1/users/{owner}/import",
            content=body,
            headers={"Content-Type": "application/x-ndjson", "Content-Length": str(size)},
        )
        seconds = time.perf_counter() - started
    answer.raise_for_status()
    counts = answer.json()["deposits"]
    note = f"{counts['committed']:,} new, {counts['duplicates']:,} duplicates, {counts['failed']:,} failed"
    return Measured(label, deposits, seconds, memory, note)


def round_ratios(results: list[Measured]) -> list[float]:
    """Each import back's rate over the mean rate of the bulk ingests just before and after it."""
    ratios = []
    for i, r in enumerate(results):
        if r.what != IMPORT_BACK_LABEL:
            continue
        before = next((b for b in reversed(results[:i]) if b.what == INGEST_LABEL), None)
        after = next((b for b in results[i + 1 :] if b.what == INGEST_LABEL), None)
        beside = [b.rate for b in (before, after) if b is not None]
        if beside:
            ratios.append(r.rate / (sum(beside) / len(beside)))
    return ratios

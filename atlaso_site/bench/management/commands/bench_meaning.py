"""`bench_meaning`: recall by words, hybrid and meaning on the bench owner, and the embedding job's throughput."""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection, transaction
from django.test.utils import override_settings

from atlaso_site.bench.management.commands.bench import QUERIES, largest_bench_owner, percentile
from atlaso_site.bench.meaning import throughput_texts
from atlaso_site.bench.store import delete_owners
from deposits.embedders import configured, forget_query_vectors
from deposits.search.meaning import forget_cached_codes, owner_codes
from deposits.selectors.embedding import model_info
from deposits.selectors.recall import recall
from deposits.services.embedding import deposits_embed

THROUGHPUT_OWNER = "bench-throughput"


def timed(function: Any) -> float:
    started = time.perf_counter()
    function()
    return (time.perf_counter() - started) * 1000


def backend_pid() -> int | None:
    """This connection's PostgreSQL backend's process id (None on another database)."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def process_cpu(pid: int) -> float | None:
    """Seconds of CPU a process of this machine has used (None: not one of this machine's)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuUse:
    """CPU per recall: this process's (the query's embedding thread too) and its PostgreSQL backend's.

    On a machine with no idle core, what a recall costs in wall time follows it.
    """

    def __init__(self, backend: int | None) -> None:
        self.process = self.backend = 0.0
        self.count = 0
        # A server on another machine: only this process's share is known.
        self.pid = backend if backend is not None and process_cpu(backend) is not None else None

    def timed(self, function: Any) -> float:
        process = time.process_time()
        backend = process_cpu(self.pid) if self.pid else None
        elapsed = timed(function)
        self.process += time.process_time() - process
        if self.pid and backend is not None:
            self.backend += (process_cpu(self.pid) or backend) - backend
        self.count += 1
        return elapsed

    def __str__(self) -> str:
        if not self.count:
            return ""
        process = self.process / self.count * 1000
        if not self.pid:
            return f"{process:.1f} (this process)"
        return f"{process:.1f} + {self.backend / self.count * 1000:.1f}"


class Command(BaseCommand):
    help = (
        "Recall on the bench owner by words, hybrid and meaning, each query embedded anew (the query "
        "cache emptied before each), in turn; then the embedding job's throughput on real text."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--repeat", type=int, default=5, help="runs of each of the 20 queries per mode (0: skip)"
        )
        parser.add_argument("--owner", help="the owner to measure (default: the largest bench owner)")
        parser.add_argument("--throughput", type=int, default=1000, help="deposits the job embeds (0: skip)")
        parser.add_argument("--threads", type=int, default=2, help="threads the job's model computes with")
        parser.add_argument(
            "--texts",
            default=str(Path(settings.BASE_DIR).parent / "shared" / "data" / "locomo-dev.zip"),
            help="LoCoMo archive whose turns the throughput run embeds (else the seed's sentences)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        found = configured()
        if found.embedder is None:
            raise CommandError(f"no embedder: {found.problem or 'ATLASO_EMBEDDER is none'}")
        with override_settings(DEBUG=False):
            if options["repeat"]:
                self._latency(options["owner"] or largest_bench_owner(), found.embedder, options["repeat"])
            if options["throughput"]:
                self._throughput(options["throughput"], options["threads"], Path(options["texts"]))

    def _latency(self, owner: str, embedder: Any, repeat: int) -> None:
        model = model_info(embedder.name)
        if model is None:
            raise CommandError(
                f"{embedder.name} was never calibrated: run embed_deposits (or seed_bench_vectors)"
            )
        forget_cached_codes()
        cold = timed(lambda: owner_codes(owner, model))
        held = owner_codes(owner, model).size
        self.stdout.write(
            f"{owner}: {held:,} vectors of {model.name}; its codes read in {cold:.0f} ms (once per process)"
        )
        cached = "hybrid, query vector cached"
        names = ("words", "hybrid", "meaning", "query embedding", cached)
        samples: dict[str, list[float]] = {name: [] for name in names}
        backend = backend_pid()
        cpu = {name: CpuUse(backend) for name in names}
        hits = {"hybrid": 0, "meaning": 0}
        for query in QUERIES:
            recall(user_id=owner, query=query, mode="hybrid")  # warm, as a live server is
            for _ in range(repeat):  # in turn, so a busy moment of the machine hits every mode alike
                samples["words"].append(
                    cpu["words"].timed(lambda q=query: recall(user_id=owner, query=q, mode="words"))
                )
                for mode in ("hybrid", "meaning"):
                    forget_query_vectors()
                    samples[mode].append(
                        cpu[mode].timed(lambda q=query, m=mode: recall(user_id=owner, query=q, mode=m))
                    )
                samples["query embedding"].append(
                    cpu["query embedding"].timed(lambda q=query: embedder.query(q))
                )
                # What hybrid costs besides embedding the query (its vector is the meaning run's).
                samples[cached].append(
                    cpu[cached].timed(lambda q=query: recall(user_id=owner, query=q, mode="hybrid"))
                )
            for mode in hits:
                results = recall(user_id=owner, query=query, mode=mode)
                hits[mode] += sum(hit.matched_by != "words" for hit in results)
        load = os.getloadavg()[0]
        self.stdout.write(f"\n20 queries × {repeat} each, in turn; load average {load:.2f}\n")
        self.stdout.write(
            "| recall | p50 ms | p99 ms | CPU ms per recall: this process + PostgreSQL |\n|---|---|---|---|"
        )
        for name, values in samples.items():
            self.stdout.write(
                f"| {name} | {percentile(values, 0.5):.1f} | {percentile(values, 0.99):.1f} | {cpu[name]} |"
            )
        words, hybrid = percentile(samples["words"], 0.5), percentile(samples["hybrid"], 0.5)
        self.stdout.write(
            f"\nhybrid p50 / words p50 = {hybrid / words:.2f} (target ≤ 2); hybrid p99 "
            f"{percentile(samples['hybrid'], 0.99):.1f} ms (target ≤ 80); hits found by meaning in the "
            f"top 10: {hits['hybrid'] / len(QUERIES):.1f} per query (hybrid), {hits['meaning'] / len(QUERIES):.1f} (meaning)"
        )
        self.stdout.write(
            "medians per query, words / hybrid ms: "
            + ", ".join(
                f"{q!r} {statistics.median(samples['words'][i * repeat : (i + 1) * repeat]):.0f}/"
                f"{statistics.median(samples['hybrid'][i * repeat : (i + 1) * repeat]):.0f}"
                for i, q in enumerate(QUERIES)
            )
        )

    def _throughput(self, count: int, threads: int, path: Path) -> None:
        from deposits.domain.validation import validate_bulk
        from deposits.services.deposits import deposit_add_many

        texts = throughput_texts(path, count)
        with transaction.atomic():
            delete_owners(THROUGHPUT_OWNER)
        for start in range(0, count, 1000):
            items = [
                {"content": text, "idempotency_key": f"throughput-{start + i}"}
                for i, text in enumerate(texts[start : start + 1000])
            ]
            result = deposit_add_many(bulk=validate_bulk(THROUGHPUT_OWNER, items), channel=None)
            if result.failed:
                raise CommandError(f"the throughput owner's deposits were refused: {result.failed[0].error}")
        load = os.getloadavg()[0]
        cpu = time.process_time()
        counts = deposits_embed(user_id=THROUGHPUT_OWNER, threads=threads)
        cpu = time.process_time() - cpu
        self.stdout.write(
            f"\nembedding job: {counts['embedded']:,} deposits ({'LoCoMo turns' if path.is_file() else 'seed sentences'}) "
            f"at {counts['per_second']}/s with {threads} threads (this process's CPU {cpu:.0f} s: "
            f"{counts['embedded'] / max(cpu, 1e-9):.1f} per CPU-second); load average {load:.2f} as it began"
        )
        with transaction.atomic():
            delete_owners(THROUGHPUT_OWNER)

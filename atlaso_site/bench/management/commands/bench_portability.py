"""`bench_portability`: export and import of a bench owner through gunicorn beside bulk ingest."""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from atlaso_site.bench import portability
from atlaso_site.bench.seed import OWNER_PREFIX
from deposits.models import OwnerTally


class Command(BaseCommand):
    help = (
        "Export the largest bench owner (or the one closest to --owner-size) through gunicorn, import "
        "it into a new owner (and again), and through the service alone, beside bulk ingest; the "
        "web worker's memory sampled throughout. Prints a table and writes --json."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--owner-size", type=int, help="measure the bench owner closest to this many deposits"
        )
        parser.add_argument(
            "--ingest", type=int, default=20_000, help="deposits for the bulk-ingest measurement"
        )
        parser.add_argument(
            "--workers", type=int, default=1, help="gunicorn workers (their memory is sampled)"
        )
        parser.add_argument(
            "--rounds",
            type=int,
            default=3,
            help="forget the owner and import it back, then bulk ingest: so many times",
        )
        parser.add_argument("--json", default=str(settings.VAR_DIR / "bench-portability.json"))

    def handle(self, *args: Any, **options: Any) -> None:
        if connection.vendor != "postgresql":
            raise CommandError("bench_portability measures PostgreSQL: set DATABASE_URL")
        owner = self._owner(options["owner_size"])
        load = os.getloadavg()[0]
        self.stdout.write(f"Owner {owner}; load average {load:.2f} as the run begins.")
        results = portability.measure(
            owner, ingest_total=options["ingest"], workers=options["workers"], rounds=options["rounds"]
        )
        self._table(results)
        ratios = portability.round_ratios(results)
        if ratios:
            self.stdout.write(
                "Import back ÷ the bulk ingests beside it, round by round: "
                + ", ".join(f"{ratio:.2f}×" for ratio in ratios)
                + f" (median {statistics.median(ratios):.2f}×); load average {os.getloadavg()[0]:.2f} at the end."
            )
        report = {
            "owner": owner, "load_average": load, "load_average_end": os.getloadavg()[0],
            "import_over_ingest_by_round": [round(r, 3) for r in ratios],
            "results": [r.row() for r in results],
        }  # fmt: skip
        Path(options["json"]).write_text(json.dumps(report, indent=2))
        self.stdout.write(f"Written to {options['json']}.")

    def _owner(self, size: int | None) -> str:
        """The bench owner measured: the one closest to `size` deposits, else the largest."""
        owners = OwnerTally.objects.filter(user_id__startswith=OWNER_PREFIX, live_deposits__gt=0)
        if size:
            rows = sorted(owners.values_list("user_id", "live_deposits"), key=lambda r: abs(r[1] - size))
        else:
            rows = list(owners.order_by("-live_deposits").values_list("user_id", "live_deposits")[:1])
        if not rows:
            raise CommandError("no bench owner: seed the store first (make bench CMD='seed_bench --help')")
        return rows[0][0]

    def _table(self, results: list[portability.Measured]) -> None:
        """One row per measurement, its rate also as a multiple of bulk ingest's."""
        # Each rate of the table is read against bulk ingest's mean over the run; the ratio that
        # counts is each import back's against the ingests on either side of it.
        ingests = [r.rate for r in results if r.what.startswith("bulk ingest")]
        ingest_rate = sum(ingests) / len(ingests)
        width = max(len(r.what) for r in results)
        self.stdout.write(
            f"{'what'.ljust(width)}  {'deposits':>9}  {'s':>7}  {'deposits/s':>10}  {'× ingest':>8}  worker RSS MiB (before → peak), worker CPU"
        )
        for r in results:
            memory = (
                f"{r.memory.baseline:.0f} → {r.memory.highest:.0f} (+{r.memory.grown:.1f}), CPU {r.memory.cpu:.1f} s"
                if r.memory
                else ""
            )
            self.stdout.write(
                f"{r.what.ljust(width)}  {r.deposits:>9,}  {r.seconds:>7.1f}  {r.rate:>10,.0f}  "
                f"{r.rate / ingest_rate:>7.2f}×  {memory} {r.note}"
            )

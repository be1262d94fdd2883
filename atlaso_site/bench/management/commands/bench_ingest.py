"""`bench_ingest`: where bulk ingest's time goes, structure by structure (atlaso_site/bench/ingest.py)."""

from __future__ import annotations

import uuid
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.test.utils import override_settings

from atlaso_site.bench.ingest import ingest_batches, ingest_costs, raw_insert_rate


class Command(BaseCommand):
    help = (
        "Bulk ingest through the service with every structure the write keeps, then with each "
        "removed in turn (rolled back: the store is left as it was), beside the raw-insert floor."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--ingest", type=int, default=10_000, help="deposits per variant and round")
        parser.add_argument("--rounds", type=int, default=3, help="rounds of every variant, in turn")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["rounds"] < 1 or options["ingest"] < 1:
            raise CommandError("--rounds and --ingest must be at least 1")
        with override_settings(DEBUG=False):
            self._measure(options)

    def _measure(self, options: dict[str, Any]) -> None:
        batches = ingest_batches(options["ingest"], run=uuid.uuid4().hex[:8])
        try:
            costs = ingest_costs(batches, rounds=options["rounds"], progress=self.stdout.write)
        except RuntimeError as error:  # not PostgreSQL, or a write the service refused
            raise CommandError(str(error)) from error
        floor = raw_insert_rate(batches)
        service = costs[0]
        floor_ms = 1000 / floor * 1000
        self.stdout.write(
            f"Per batch of 1,000 deposits, medians of {options['rounds']} rounds. The floor (raw unnest "
            f"INSERT into the same table): {floor:,.0f} rows/s, {floor_ms:.1f} ms. The targets are ≥ 10,000/s "
            f"(≤ 100 ms) and ≥ 50% of the floor (≤ {2 * floor_ms:.1f} ms)."
        )
        header = f"{'variant':56} {'deposits/s':>10} {'ms':>7} {'saves':>7} {'client CPU':>10}  what it keeps"
        self.stdout.write(header)
        for cost in costs:
            saves = "" if cost is service else f"{service.ms_per_batch - cost.ms_per_batch:7.1f}"
            self.stdout.write(
                f"{cost.name:56} {cost.rate:10,.0f} {cost.ms_per_batch:7.1f} {saves:>7} "
                f"{cost.client_ms_per_batch:10.1f}  {cost.keeps}"
            )

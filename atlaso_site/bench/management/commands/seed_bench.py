"""`seed_bench`: build a realistic store of N deposits over M owners, fast (COPY on PostgreSQL)."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection, transaction
from django.utils import timezone

from atlaso_site.bench.seed import OWNER_PREFIX, copy_text, generate
from deposits.models import Deposit
from deposits.services.bag_counts import bag_terms_refresh
from deposits.services.episodes import episodes_open_existing

DEPOSIT_COLUMNS = (
    "id, user_id, bag_id, content, polarity, evidence_grade, scope_model, scope_dataset, scope_env, "
    "scope_version, scope_n, scope_seed, scope_note, tags, artifact_refs, author, author_role, task_id, "
    "channel, repro_status, belief_key, belief_value, created_at"
)
BAG_COLUMNS = (
    "id, user_id, model, dataset, env, version, n, seed, live_positive, live_negative, live_cautionary, "
    "live_open, newest_positive_at, newest_negative_at, newest_cautionary_at, kept_positive, kept_negative, "
    "kept_cautionary, kept_superseded, last_deposit_at, created_at, updated_at"
)
EDGE_COLUMNS = "user_id, new_deposit_id, old_deposit_id, reason, created_at"
# Dropped while loading and built again after, exactly as the migrations left it (its storage
# parameters included).
GIN_INDEX = "deposit_user_search"
CLUSTER_BAGS = "CLUSTER deposits_scopebag USING bag_user_updated"
FLUSH_ROWS = 50_000


class Command(BaseCommand):
    help = "Build a benchmark store: power-law owners (largest ~10%), bags of 1..50, ~5% in conflict."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--deposits", type=int, default=100_000)
        parser.add_argument("--owners", type=int, default=1_000)
        parser.add_argument(
            "--seed", type=int, default=7, help="random seed: the same seed gives the same store"
        )
        parser.add_argument(
            "--belief-share", type=float, default=0.05, help="share of deposits carrying a belief"
        )
        parser.add_argument("--replace", action="store_true", help="delete an earlier bench store first")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["deposits"] < 1 or not 1 <= options["owners"] <= options["deposits"]:
            raise CommandError("need --deposits ≥ 1 and 1 ≤ --owners ≤ --deposits")
        existing = Deposit.objects.filter(user_id__startswith=OWNER_PREFIX).exists()
        if existing and not options["replace"]:
            raise CommandError(f"a bench store ({OWNER_PREFIX}* owners) exists; pass --replace to rebuild it")
        started = time.perf_counter()
        if existing:
            self._delete_bench_owners()
            self.stdout.write(f"Deleted the earlier bench store in {time.perf_counter() - started:.1f}s")
        postgres = connection.vendor == "postgresql"
        loaded = [0]
        buffers: dict[str, list[tuple]] = {"bags": [], "deposits": [], "edges": []}

        def flush() -> None:
            if postgres:
                self._copy(buffers)
            else:
                self._insert(buffers)
            loaded[0] += len(buffers["deposits"])
            for rows in buffers.values():
                rows.clear()
            elapsed = time.perf_counter() - started
            self.stdout.write(f"  {loaded[0]:>10,} deposits loaded ({loaded[0] / max(elapsed, 1e-9):,.0f}/s)")

        def on_owner(_user: str, deposits: list[tuple], bags: list[tuple], edges: list[tuple]) -> None:
            buffers["deposits"].extend(deposits)
            buffers["bags"].extend(bags)
            buffers["edges"].extend(edges)
            if len(buffers["deposits"]) >= FLUSH_ROWS:
                flush()

        with transaction.atomic():
            if postgres:
                with connection.cursor() as cursor:
                    # Check foreign keys per COPY, so nothing is pending when the index is built.
                    cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
                    cursor.execute("SELECT pg_get_indexdef(%s::regclass)", [GIN_INDEX])
                    (gin_definition,) = cursor.fetchone()
                    cursor.execute(f"DROP INDEX {GIN_INDEX}")
            counts = generate(
                deposits=options["deposits"],
                owners=options["owners"],
                now=timezone.now(),
                seed=options["seed"],
                belief_share=options["belief_share"],
                on_owner=on_owner,
            )
            if buffers["deposits"]:
                flush()
            if postgres:
                index_started = time.perf_counter()
                with connection.cursor() as cursor:
                    cursor.execute(gin_definition)
                self.stdout.write(f"  full-text index built in {time.perf_counter() - index_started:.1f}s")
                terms_started = time.perf_counter()
                bag_terms_refresh(user_prefix=OWNER_PREFIX)
                # Writing the lexemes moved every bag row; put each owner's bags back together, as
                # the periodic CLUSTER that docs/BENCHMARKS.md recommends keeps them.
                with connection.cursor() as cursor:
                    cursor.execute(CLUSTER_BAGS)
                self.stdout.write(
                    f"  bag lexemes built and bags clustered in {time.perf_counter() - terms_started:.1f}s"
                )
        # The store is loaded beside the services, so its present conflicts get their episodes here.
        opened = episodes_open_existing(connection, user_prefix=OWNER_PREFIX)
        self.stdout.write(f"  {opened:,} conflict episodes opened")
        if postgres:
            with connection.cursor() as cursor:
                cursor.execute(
                    "ANALYZE deposits_deposit; ANALYZE deposits_scopebag; ANALYZE deposits_contradiction"
                )
        elapsed = time.perf_counter() - started
        self.stdout.write(
            f"Seeded {counts.deposits:,} deposits, {counts.bags:,} bags ({counts.conflict_bags:,} in conflict), "
            f"{counts.edges:,} corrections over {options['owners']:,} owners in {elapsed:.1f}s "
            f"({counts.deposits / elapsed:,.0f} deposits/s)."
        )

    def _copy(self, buffers: dict[str, list[tuple]]) -> None:
        with connection.cursor() as cursor:
            raw = cursor.cursor
            for table, columns, rows in (
                ("deposits_scopebag", BAG_COLUMNS, buffers["bags"]),
                ("deposits_deposit", DEPOSIT_COLUMNS, buffers["deposits"]),
                ("deposits_contradiction", EDGE_COLUMNS, buffers["edges"]),
            ):
                if rows:
                    with raw.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                        copy.write(copy_text(rows))

    def _insert(self, buffers: dict[str, list[tuple]]) -> None:
        adapt = connection.ops.adapt_datetimefield_value

        def prepared(rows: list[tuple]) -> list[tuple]:
            return [
                tuple(
                    adapt(v)
                    if hasattr(v, "tzinfo")
                    else (v.hex if hasattr(v, "hex") and not isinstance(v, str | int | float) else v)
                    for v in row
                )
                for row in rows
            ]

        with connection.cursor() as cursor:
            for table, columns, rows in (
                ("deposits_scopebag", BAG_COLUMNS, buffers["bags"]),
                ("deposits_deposit", DEPOSIT_COLUMNS, buffers["deposits"]),
                ("deposits_contradiction", EDGE_COLUMNS, buffers["edges"]),
            ):
                if rows:
                    marks = ", ".join(["%s"] * len(rows[0]))
                    cursor.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", prepared(rows))

    def _delete_bench_owners(self) -> None:
        with transaction.atomic(), connection.cursor() as cursor:
            like = OWNER_PREFIX + "%"
            only_bench = not Deposit.objects.exclude(user_id__startswith=OWNER_PREFIX).exists()
            if only_bench and connection.vendor == "postgresql":
                # A store of nothing but bench owners: emptying the tables is instant, where
                # deleting a million rows checks every foreign key one by one.
                cursor.execute(
                    "TRUNCATE deposits_contradiction, deposits_idempotencyentry, deposits_deposit, "
                    "deposits_conflictepisode, deposits_scopebag, deposits_recalllog"
                )
                return
            cursor.execute("DELETE FROM deposits_contradiction WHERE user_id LIKE %s", [like])
            cursor.execute("DELETE FROM deposits_idempotencyentry WHERE user_id LIKE %s", [like])
            cursor.execute("DELETE FROM deposits_deposit WHERE user_id LIKE %s", [like])
            cursor.execute("DELETE FROM deposits_conflictepisode WHERE user_id LIKE %s", [like])
            cursor.execute("DELETE FROM deposits_scopebag WHERE user_id LIKE %s", [like])
            cursor.execute("DELETE FROM deposits_recalllog WHERE user_id LIKE %s", [like])

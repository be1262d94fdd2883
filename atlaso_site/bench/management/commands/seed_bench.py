"""`seed_bench`: build a realistic store of N deposits over M owners, fast (COPY on PostgreSQL)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser, OutputWrapper
from django.db import connection, transaction
from django.utils import timezone

from atlaso_site.bench.seed import OWNER_PREFIX, copy_text, generate
from atlaso_site.bench.store import OWNER_TABLES, delete_owners
from deposits.models import Deposit
from deposits.services.bag_counts import bag_terms_refresh
from deposits.services.episodes import episodes_open_existing
from deposits.services.owners import owner_tallies_rebuild

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


class Batches:
    """The generated rows not yet written: written every FLUSH_ROWS deposits, each time with the progress."""

    def __init__(
        self, write: Callable[[dict[str, list[tuple]]], None], stdout: OutputWrapper, started: float
    ) -> None:
        self.rows: dict[str, list[tuple]] = {"bags": [], "deposits": [], "edges": []}
        self.loaded = 0
        self._write = write
        self._stdout = stdout
        self._started = started

    def add(self, _user: str, deposits: list[tuple], bags: list[tuple], edges: list[tuple]) -> None:
        """One owner's rows, as `generate` hands them over."""
        self.rows["deposits"].extend(deposits)
        self.rows["bags"].extend(bags)
        self.rows["edges"].extend(edges)
        if len(self.rows["deposits"]) >= FLUSH_ROWS:
            self.flush()

    def finish(self) -> None:
        """Write what the last owners left."""
        if self.rows["deposits"]:
            self.flush()

    def flush(self) -> None:
        self._write(self.rows)
        self.loaded += len(self.rows["deposits"])
        for rows in self.rows.values():
            rows.clear()
        elapsed = time.perf_counter() - self._started
        self._stdout.write(
            f"  {self.loaded:>10,} deposits loaded ({self.loaded / max(elapsed, 1e-9):,.0f}/s)"
        )


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
        batches = Batches(self._copy if postgres else self._insert, self.stdout, started)
        with transaction.atomic():
            gin_definition = self._drop_search_index() if postgres else ""
            counts = generate(
                deposits=options["deposits"],
                owners=options["owners"],
                now=timezone.now(),
                seed=options["seed"],
                belief_share=options["belief_share"],
                on_owner=batches.add,
            )
            batches.finish()
            if postgres:
                self._build_search_index(gin_definition)
        # The store is loaded beside the services, so its present conflicts get their episodes here.
        opened = episodes_open_existing(connection, user_prefix=OWNER_PREFIX)
        self.stdout.write(f"  {opened:,} conflict episodes opened")
        # And their owners' tallies, which the services keep on every write.
        self.stdout.write(f"  {owner_tallies_rebuild(user_prefix=OWNER_PREFIX):,} owner tallies counted")
        if postgres:
            with connection.cursor() as cursor:
                # The episodes too: a table never analysed is planned as empty, and the owners
                # list then loops over the open episodes once per owner (735 ms at 1M, not 70).
                cursor.execute(
                    "ANALYZE deposits_deposit; ANALYZE deposits_scopebag; ANALYZE deposits_contradiction; "
                    "ANALYZE deposits_conflictepisode; ANALYZE deposits_ownertally; ANALYZE deposits_conflictcopy; "
                    "ANALYZE deposits_bagterms"
                )
        elapsed = time.perf_counter() - started
        self.stdout.write(
            f"Seeded {counts.deposits:,} deposits, {counts.bags:,} bags ({counts.conflict_bags:,} in conflict), "
            f"{counts.edges:,} corrections over {options['owners']:,} owners in {elapsed:.1f}s "
            f"({counts.deposits / elapsed:,.0f} deposits/s)."
        )

    def _drop_search_index(self) -> str:
        """Drop the full-text index for the load (PostgreSQL); its definition, to build it again."""
        with connection.cursor() as cursor:
            # Check foreign keys per COPY, so nothing is pending when the index is built.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute("SELECT pg_get_indexdef(%s::regclass)", [GIN_INDEX])
            (gin_definition,) = cursor.fetchone()
            cursor.execute(f"DROP INDEX {GIN_INDEX}")
        return gin_definition

    def _build_search_index(self, gin_definition: str) -> None:
        """Build the full-text index again, then the bags' lexemes (PostgreSQL)."""
        index_started = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute(gin_definition)
        self.stdout.write(f"  full-text index built in {time.perf_counter() - index_started:.1f}s")
        terms_started = time.perf_counter()
        with connection.cursor() as cursor:
            # Statistics of the rows just loaded (ANALYZE samples this transaction's own rows). In
            # a new store the deposits have none: the lexeme update expects 2 live ones and
            # anti-joins them to the supersessions by a nested loop, deposits × corrections (a
            # second at 100k; at 5M still running after 15 minutes).
            cursor.execute("ANALYZE deposits_scopebag; ANALYZE deposits_deposit")
        bag_terms_refresh(user_prefix=OWNER_PREFIX)
        # Writing the lexemes moved every bag row; put each owner's bags back together, as
        # the periodic CLUSTER that docs/BENCHMARKS.md recommends keeps them.
        with connection.cursor() as cursor:
            cursor.execute(CLUSTER_BAGS)
        self.stdout.write(
            f"  bag lexemes built and bags clustered in {time.perf_counter() - terms_started:.1f}s"
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
        with transaction.atomic():
            only_bench = not Deposit.objects.exclude(user_id__startswith=OWNER_PREFIX).exists()
            if only_bench and connection.vendor == "postgresql":
                # A store of nothing but bench owners: emptying the tables is instant, where
                # deleting a million rows checks every foreign key one by one.
                with connection.cursor() as cursor:
                    cursor.execute(f"TRUNCATE {', '.join(OWNER_TABLES)}, deposits_conflictcopy")
                return
            delete_owners(OWNER_PREFIX)

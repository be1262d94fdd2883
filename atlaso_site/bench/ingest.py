"""Bulk ingest as the benchmark measures it: the batches, the raw-insert floor, each structure's cost.

`bench` times the service on `ingest_batches` beside `raw_insert_rate` (operations.md's floor).
`bench_ingest` asks where the difference goes: it runs the same batches through the same service
with each structure removed in turn (an index, a trigger, a foreign key), inside a transaction it
rolls back, so the store and its schema are left as they were.
"""

from __future__ import annotations

import random
import statistics
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from atlaso_site.bench.seed import VOCABULARY, sentence
from atlaso_site.bench.store import delete_owners
from deposits.domain.idempotency import idempotency_key
from deposits.domain.validation import validate_bulk
from deposits.services.deposits import deposit_add_many
from deposits.sql import conflict_copies
from deposits.sql.bulk import insert_rows

INGEST_PREFIX = "benchingest-"
BATCH = 1000
Batch = tuple[str, list[dict[str, Any]]]
RAW_COLUMNS = (
    ("id", "uuid"), ("user_id", "text"), ("bag_id", "text"), ("content", "text"), ("polarity", "text"),
    ("evidence_grade", "text"), ("scope_model", "text"), ("scope_env", "text"), ("scope_version", "text"),
    ("tags", "jsonb"), ("artifact_refs", "jsonb"), ("repro_status", "text"), ("created_at", "timestamptz"),
)  # fmt: skip


def ingest_batches(total: int, *, run: str, batch: int = BATCH) -> list[Batch]:
    """`total` deposits as bulk calls of `batch` items, each an import of one owner's notes.

    Over 20 owners, in bags of about 25 (the seed's 1..50), positive, negative or open at random.
    """
    rng = random.Random(11)
    batches = []
    for number in range(max(1, total // batch)):
        user_id = f"{INGEST_PREFIX}{run}-{number % 20}"
        model = rng.choice(VOCABULARY)
        items = []
        for i in range(batch):
            items.append({
                "content": sentence(rng), "polarity": rng.choice(["positive", "negative", "open"]),
                "evidence_grade": "observed", "scope": {"model": model, "env": "prod", "version": f"v{rng.randrange(40)}"},
                "idempotency_key": idempotency_key(run, number, i),
            })  # fmt: skip
        batches.append((user_id, items))
    return batches


def one_bag_batches(user_id: str, total: int, *, run: str, batch: int = BATCH) -> list[Batch]:
    """`total` deposits of one owner in one bag, each with a word of its own, as bulk calls.

    Without a scope, so every deposit lands in the same bag; `batch` items a call.
    """
    rng = random.Random(13)
    items = [
        {
            "content": f"{sentence(rng)} ref{n}", "polarity": "open", "evidence_grade": "observed",
            "idempotency_key": idempotency_key(run, "one-bag", n),
        }
        for n in range(total)
    ]  # fmt: skip
    return [(user_id, items[start : start + batch]) for start in range(0, total, batch)]


def ingest(batches: Sequence[Batch], *, after_each: Callable[[], None] | None = None) -> None:
    """Every batch through the service layer, as the bulk endpoint calls it."""
    for user_id, items in batches:
        result = deposit_add_many(bulk=validate_bulk(user_id, items), channel="bench-loader")
        if result.failed:
            raise RuntimeError(f"ingest failed: {result.failed[0].error.message}")
        if after_each is not None:
            after_each()


def raw_insert_rate(batches: Sequence[Batch]) -> float:
    """Rows a second of the same rows inserted without rules, one statement per batch: the floor.

    operations.md's floor, a batched `INSERT … SELECT FROM unnest(arrays)` (the service itself
    inserts with COPY), in a transaction rolled back afterwards.
    """
    now = timezone.now()
    prepared = []
    for user_id, items in batches:
        rows = [
            (uuid.uuid4(), f"raw{user_id}", "raw-bag", item["content"], item["polarity"], item["evidence_grade"],
             item["scope"]["model"], "prod", item["scope"]["version"], [], [], "unreplicated", now)
            for item in items
        ]  # fmt: skip
        prepared.append(rows)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO deposits_scopebag (id, user_id, live_positive, live_negative, live_cautionary, live_open, "
            "kept_positive, kept_negative, kept_cautionary, kept_superseded, created_at, updated_at) "
            "VALUES ('raw-bag', %s, 0, 0, 0, 0, 0, 0, 0, 0, %s, %s) ON CONFLICT (id) DO NOTHING",
            [
                f"{INGEST_PREFIX}raw",
                connection.ops.adapt_datetimefield_value(now),
                connection.ops.adapt_datetimefield_value(now),
            ],
        )
        started = time.perf_counter()
        for rows in prepared:
            insert_rows("deposits_deposit", RAW_COLUMNS, rows, copy=False)
        rate = sum(len(rows) for rows in prepared) / (time.perf_counter() - started)
        transaction.set_rollback(True)
    return rate


def delete_ingested() -> None:
    """Remove everything the ingest and single-add measurements wrote."""
    with transaction.atomic():
        delete_owners(INGEST_PREFIX)


# --- What each structure costs the write ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Part:
    """A structure the write keeps, and the statements that take it away.

    They run inside a transaction that is rolled back.
    """

    name: str
    keeps: str
    remove: Callable[[], list[str]]


def _foreign_key(table: str, column: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT conname FROM pg_constraint WHERE contype = 'f' AND conrelid = %s::regclass "
            "AND conkey = ARRAY[(SELECT attnum FROM pg_attribute WHERE attrelid = %s::regclass AND attname = %s)]",
            [table, table, column],
        )
        return [f'ALTER TABLE {table} DROP CONSTRAINT "{name}"' for (name,) in cursor.fetchall()]


PARTS = (
    Part("conflict copies", "recall reads conflict bags first from them", conflict_copies.uninstall_sql),
    Part(
        "bags' lexeme index", "recall's flags over every matching bag", lambda: ["DROP INDEX bag_user_terms"]
    ),
    Part(
        "deposit → bag foreign key",
        "no deposit outside a bag",
        lambda: _foreign_key("deposits_deposit", "bag_id"),
    ),
    Part(
        "key → deposit foreign key",
        "no idempotency entry for a missing deposit",
        lambda: _foreign_key("deposits_idempotencyentry", "deposit_id"),
    ),
    Part(
        "repeated-lexemes index",
        "recall's exact early stop on common words",
        lambda: ["DROP INDEX deposit_user_repeated"],
    ),
)


@dataclass(frozen=True, slots=True)
class Cost:
    name: str
    keeps: str
    rate: float  # deposits a second, the median of the rounds
    ms_per_batch: float
    client_ms_per_batch: float  # this process's CPU: validation, the gate, fingerprints, rows


def _checked_now() -> None:
    """Fire the deferred foreign-key checks as a commit would, then defer again."""
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")


# The tables a bulk write leaves dead rows in once rolled back.
WRITTEN = (
    "deposits_deposit", "deposits_idempotencyentry", "deposits_conflictcopy", "deposits_scopebag",
    "deposits_conflictepisode", "deposits_ownertally", "deposits_deploymenttally", "deposits_bagterms",
)  # fmt: skip


def vacuum_written() -> None:
    """VACUUM what a rolled-back write left behind, so the next variant meets the store as the first did.

    PostgreSQL runs here with autovacuum off; the dead rows would slow every later variant.
    """
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM {', '.join(WRITTEN)}")


def _timed_ingest(batches: Sequence[Batch], remove: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of the batches through the service with `remove` applied.

    Everything is rolled back and vacuumed away afterwards.
    """
    with transaction.atomic():
        with connection.cursor() as cursor:
            for statement in remove:
                cursor.execute(statement)
        cpu, started = time.process_time(), time.perf_counter()
        ingest(batches, after_each=_checked_now)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        transaction.set_rollback(True)
    vacuum_written()
    return wall, cpu


def _variants() -> list[tuple[str, str, Callable[[], list[str]]]]:
    """Each variant measured: its name, what the removed structure keeps, and how to remove it.

    The last is the statements that remove the structure.
    """
    return [
        ("the service as it ships", "", list),
        *((f"without the {part.name}", part.keeps, part.remove) for part in PARTS),
        ("without all of them", "", lambda: [sql for part in PARTS for sql in part.remove()]),
    ]


def ingest_costs(batches: Sequence[Batch], *, rounds: int, progress: Callable[[str], None]) -> list[Cost]:
    """The service's ingest with every structure, without each of PARTS, and without all of them.

    In turn over `rounds` rounds, so a busy minute of the machine hits them alike; each round starts
    one variant later. Each variant runs in a transaction rolled back afterwards; the deferred
    checks fire after each batch, as at commit (the commit's own WAL flush is left out of every
    variant alike).
    """
    if connection.vendor != "postgresql":
        raise RuntimeError("bench_ingest measures PostgreSQL's structures; set DATABASE_URL")
    variants = _variants()
    deposits = sum(len(items) for _, items in batches)
    walls: dict[str, list[float]] = {name: [] for name, _, _ in variants}
    cpus: dict[str, list[float]] = {name: [] for name, _, _ in variants}
    for number in range(1, rounds + 1):
        # Each round starts one variant later, so none is always first after the last VACUUM.
        shift = (number - 1) % len(variants)
        for name, _, remove in variants[shift:] + variants[:shift]:
            wall, cpu = _timed_ingest(batches, remove())
            walls[name].append(wall)
            cpus[name].append(cpu)
        progress(f"round {number} of {rounds} done")
    per_batch = 1000 / len(batches)
    return [
        Cost(
            name=name,
            keeps=keeps,
            rate=deposits / statistics.median(walls[name]),
            ms_per_batch=statistics.median(walls[name]) * per_batch,
            client_ms_per_batch=statistics.median(cpus[name]) * per_batch,
        )
        for name, keeps, _ in variants
    ]

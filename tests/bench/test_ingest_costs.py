"""bench_ingest's measurement leaves the store and its schema as they were.

Each structure is taken away inside a rolled-back transaction.
"""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from atlaso_site.bench.ingest import INGEST_PREFIX, PARTS, ingest_batches, ingest_costs
from deposits.models import BagTerms, ConflictCopy, Deposit, IdempotencyEntry, ScopeBag

pytestmark = pytest.mark.django_db(transaction=True)


def schema() -> dict[str, set[str]]:
    """The deposits tables' indexes, triggers and foreign keys, by name."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename LIKE 'deposits_%%'")
        indexes = {name for (name,) in cursor.fetchall()}
        cursor.execute("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal AND tgenabled <> 'D'")
        triggers = {name for (name,) in cursor.fetchall()}
        cursor.execute("SELECT conname FROM pg_constraint WHERE contype = 'f'")
        keys = {name for (name,) in cursor.fetchall()}
    return {"indexes": indexes, "triggers": triggers, "foreign keys": keys}


def test_every_variant_writes_through_the_service_and_leaves_the_store_and_schema_as_they_were(on_postgres):
    before = schema()
    batches = ingest_batches(60, run="t", batch=30)
    seen: list[str] = []

    costs = ingest_costs(batches, rounds=2, progress=seen.append)

    assert [cost.name for cost in costs] == [
        "the service as it ships",
        *(f"without the {part.name}" for part in PARTS),
        "without all of them",
    ]
    assert all(cost.rate > 0 and cost.ms_per_batch > 0 for cost in costs)
    assert seen == ["round 1 of 2 done", "round 2 of 2 done"]
    assert schema() == before
    for model in (Deposit, ScopeBag, IdempotencyEntry, ConflictCopy, BagTerms):
        assert not model.objects.filter(user_id__startswith=INGEST_PREFIX).exists()


def test_a_write_the_service_refuses_stops_the_measurement(on_postgres, monkeypatch):
    from atlaso_site.bench import ingest

    batches = ingest_batches(10, run="t", batch=10)
    batches[0][1][3]["polarity"] = "sideways"

    with pytest.raises(RuntimeError, match="polarity"):
        ingest.ingest(batches)


def test_the_command_refuses_sqlite():
    if connection.vendor == "postgresql":
        pytest.skip("the refusal is SQLite's")
    with pytest.raises(CommandError, match="PostgreSQL"):
        call_command("bench_ingest", "--ingest", "10", "--rounds", "1")

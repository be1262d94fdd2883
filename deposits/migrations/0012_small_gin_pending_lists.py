"""Recall's GIN indexes keep a small pending list (PostgreSQL): 256 kB instead of 4 MB.

With `fastupdate`, GIN queues new entries in a pending list and merges them into the index
when the list outgrows `gin_pending_list_limit` (4 MB by default) or at VACUUM; until then,
every search reads the whole list. Recall reads up to three GIN indexes (the bags' lexemes,
the deposits' and their repeated lexemes), so on a store taking writes a recall paid for up to
12 MB of pending entries: at 1M deposits, after two 10,000-deposit ingests, recall's p50 went
from 26.6 ms to 38.7 ms and its p99 from 61 ms to 105 ms. With 256 kB lists recall measures as
on a vacuumed store, and ingest loses 5-10% (docs/benchmarks/archive/2026-11-30-issue-11-recall.md). `fastupdate = off` kept
recall as fast but cost ingest 35%.
"""

from django.db import migrations

INDEXES = ("deposit_user_search", "deposit_user_repeated", "bag_user_terms")
PENDING_LIST_KB = 256


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for index in INDEXES:
            schema_editor.execute(f"ALTER INDEX {index} SET (gin_pending_list_limit = {PENDING_LIST_KB})")


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for index in INDEXES:
            schema_editor.execute(f"ALTER INDEX {index} RESET (gin_pending_list_limit)")


class Migration(migrations.Migration):
    dependencies = [("deposits", "0011_repeated_lexemes")]
    operations = [migrations.RunPython(forward, backward)]

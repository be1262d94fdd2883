"""A bag row keeps at most 512 of its lexemes; the rest lie in chunks (`deposits.sql.bag_terms`
says why: a write re-indexed every lexeme of its bag, so an add grew with the bag).

On PostgreSQL the chunks table gains its text column and a GIN index by (bag, lexeme), the
trigger that spills a row past the bound, and the aggregate's function that asks a bag's chunks
(now given the row's lexemes: NULL still means lost in one oversized write); the bags already past
the bound are spilled. SQLite gets the bare table.
"""

from importlib import import_module

from django.db import migrations, models

from deposits.search.postgres import OVERFLOW_MATCH_FUNCTION, overflow_match_function_sql
from deposits.sql.bag_terms import ROW_LEXEMES, TABLE, install_sql, uninstall_sql

# A small pending list, as recall's other GIN indexes keep (deposits/0012).
POSTGRES = [
    f"ALTER TABLE {TABLE} ADD COLUMN terms tsvector NOT NULL",
    f"CREATE INDEX bag_terms_bag_search ON {TABLE} USING gin (bag_id, terms) WITH (gin_pending_list_limit = 256)",
    *install_sql(),
    f"DROP FUNCTION IF EXISTS {OVERFLOW_MATCH_FUNCTION}(text, text, tsquery)",
    overflow_match_function_sql(),
    # Through the trigger.
    f"UPDATE deposits_scopebag SET live_terms = live_terms WHERE length(live_terms) > {ROW_LEXEMES}",
]


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in POSTGRES:
            schema_editor.execute(statement)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in uninstall_sql():
            schema_editor.execute(statement)
        schema_editor.execute(f"DROP FUNCTION IF EXISTS {OVERFLOW_MATCH_FUNCTION}(text, text, tsquery, tsvector)")
        schema_editor.execute(import_module("deposits.migrations.0022_overflow_match_function").FUNCTION)
        # The previous function reads no chunks: a spilled bag is asked of its deposits instead.
        schema_editor.execute(
            "UPDATE deposits_scopebag SET live_terms = NULL WHERE terms_overflow AND live_terms IS NOT NULL"
        )


class Migration(migrations.Migration):
    dependencies = [("deposits", "0023_conflict_copies")]

    operations = [
        migrations.CreateModel(
            name="BagTerms",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("user_id", models.CharField(max_length=128)),
                ("bag_id", models.CharField(max_length=40)),
            ],
        ),
        migrations.RunPython(forward, backward),
    ]

"""Which of a deposit's lexemes it repeats, indexed (PostgreSQL), so recall's walk can stop at
the rank of a word held once.

`ts_rank` gives a document 0.1·Σ1/j²/1.6449 for each query lexeme it holds at j = 1..n
positions: 0.0608 for a lexeme held once, up to 0.1 for one repeated without limit. The walk's
bound had to assume the latter. With the deposits that repeat a query word found by this index
and scored in full, every other match ranks exactly 0.0608·m/k, and the walk can stop as soon
as each class holds its N best. The index is over an expression of the stored vector: nothing
is parsed twice, and the table gains no column.
"""

from django.db import migrations

FUNCTION = """
CREATE OR REPLACE FUNCTION atlaso_repeated_lexemes(tsvector) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT coalesce(array_to_tsvector(array_agg(u.lexeme)), ''::tsvector)
    FROM unnest($1) AS u WHERE cardinality(u.positions) > 1
$$
"""
POSTGRES = [
    FUNCTION,
    "CREATE INDEX IF NOT EXISTS deposit_user_repeated ON deposits_deposit "
    "USING gin (user_id, atlaso_repeated_lexemes(search_vector))",
]
POSTGRES_REVERSE = [
    "DROP INDEX IF EXISTS deposit_user_repeated",
    "DROP FUNCTION IF EXISTS atlaso_repeated_lexemes(tsvector)",
]


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in POSTGRES:
            schema_editor.execute(statement)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in POSTGRES_REVERSE:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("deposits", "0010_recall_by_owner")]
    operations = [migrations.RunPython(forward, backward)]

"""PostgreSQL: each bag keeps the lexemes of its live deposits, so recall counts matching bags
without walking every matching deposit; the deposit index also leads with polarity, so each
polarity's best hits are found without sorting every match."""

from django.db import migrations

POSTGRES = [
    "ALTER TABLE deposits_scopebag ADD COLUMN live_terms tsvector",
    "UPDATE deposits_scopebag b SET live_terms = s.terms FROM ("
    "  SELECT d.bag_id, strip(to_tsvector('english', string_agg(d.content || ' ' || coalesce(d.scope_note, ''), ' '))) AS terms"
    "  FROM deposits_deposit d WHERE d.retracted_at IS NULL"
    "  AND NOT EXISTS (SELECT 1 FROM deposits_contradiction c WHERE c.old_deposit_id = d.id)"
    "  GROUP BY d.bag_id) s WHERE b.id = s.bag_id",
    "CREATE INDEX bag_user_terms ON deposits_scopebag USING gin (user_id, live_terms)",
    "DROP INDEX IF EXISTS deposit_user_search",
    "CREATE INDEX deposit_user_search ON deposits_deposit USING gin (user_id, polarity, search_vector)",
    # A common word's matches are walked newest first, one polarity at a time.
    "CREATE INDEX deposit_user_polarity_created ON deposits_deposit (user_id, polarity, created_at)",
]
POSTGRES_REVERSE = [
    "DROP INDEX IF EXISTS deposit_user_polarity_created",
    "DROP INDEX IF EXISTS deposit_user_search",
    "CREATE INDEX deposit_user_search ON deposits_deposit USING gin (user_id, search_vector)",
    "DROP INDEX IF EXISTS bag_user_terms",
    "ALTER TABLE deposits_scopebag DROP COLUMN IF EXISTS live_terms",
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
    dependencies = [("deposits", "0003_full_text_search")]
    operations = [migrations.RunPython(forward, backward)]

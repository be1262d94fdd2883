"""Full-text search: a generated tsvector + GIN (user_id, tsv) on PostgreSQL; FTS5 on SQLite."""

from django.db import migrations

POSTGRES = [
    # btree_gin lets one GIN index lead with user_id, so a search reads one owner's entries.
    "CREATE EXTENSION IF NOT EXISTS btree_gin",
    "ALTER TABLE deposits_deposit ADD COLUMN search_vector tsvector GENERATED ALWAYS AS "
    "(to_tsvector('english', content || ' ' || coalesce(scope_note, ''))) STORED",
    "CREATE INDEX deposit_user_search ON deposits_deposit USING gin (user_id, search_vector)",
]
POSTGRES_REVERSE = [
    "DROP INDEX IF EXISTS deposit_user_search",
    "ALTER TABLE deposits_deposit DROP COLUMN IF EXISTS search_vector",
]

SQLITE = [
    "CREATE VIRTUAL TABLE deposits_fts USING fts5(content, scope_note, content='deposits_deposit', "
    "content_rowid='rowid', tokenize='porter unicode61')",
    "CREATE TRIGGER deposits_fts_insert AFTER INSERT ON deposits_deposit BEGIN "
    "INSERT INTO deposits_fts(rowid, content, scope_note) VALUES (new.rowid, new.content, new.scope_note); END",
    "CREATE TRIGGER deposits_fts_delete AFTER DELETE ON deposits_deposit BEGIN "
    "INSERT INTO deposits_fts(deposits_fts, rowid, content, scope_note) "
    "VALUES ('delete', old.rowid, old.content, old.scope_note); END",
    "INSERT INTO deposits_fts(deposits_fts) VALUES ('rebuild')",
]
SQLITE_REVERSE = [
    "DROP TRIGGER IF EXISTS deposits_fts_delete",
    "DROP TRIGGER IF EXISTS deposits_fts_insert",
    "DROP TABLE IF EXISTS deposits_fts",
]


def forward(apps, schema_editor):
    for statement in POSTGRES if schema_editor.connection.vendor == "postgresql" else SQLITE:
        schema_editor.execute(statement)


def backward(apps, schema_editor):
    for statement in POSTGRES_REVERSE if schema_editor.connection.vendor == "postgresql" else SQLITE_REVERSE:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("deposits", "0002_immutable_deposits")]
    operations = [migrations.RunPython(forward, backward)]

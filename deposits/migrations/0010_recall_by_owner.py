"""Recall reads one owner's entries, not every owner's.

PostgreSQL: recall asks every overflowed bag of the owner (lexemes past a tsvector's 1 MB)
whether a deposit matches; without an index that meant reading every bag row of the owner to
find none (33 ms on the largest owner of the 1M bench store, for every query). A partial index
holds only the overflowed bags.

SQLite: an FTS5 MATCH returns every owner's matches, so an owner's recall in a shared file read
the whole file's postings. The full-text table is rebuilt contentless, its rowid the owner's
number × 2**36 + the deposit's rowid: an owner's entries are one rowid range, which FTS5 seeks
to. The same tokens in the same columns, so bm25 ranks exactly as before.
"""

from django.db import migrations

POSTGRES = [
    "CREATE INDEX IF NOT EXISTS bag_user_overflow ON deposits_scopebag (user_id) WHERE terms_overflow"
]
POSTGRES_REVERSE = ["DROP INDEX IF EXISTS bag_user_overflow"]

# Owner numbers fill the high bits: 2**27 owners, each with rowids below 2**36.
OWNER_BLOCK = 2**36
OWNER_START = f"(SELECT o.number * {OWNER_BLOCK} FROM deposits_ftsowner o WHERE o.user_id = {{user}})"
SQLITE = [
    "DROP TRIGGER IF EXISTS deposits_fts_delete",
    "DROP TRIGGER IF EXISTS deposits_fts_insert",
    "DROP TABLE IF EXISTS deposits_fts",
    "CREATE TABLE deposits_ftsowner (user_id varchar(128) NOT NULL PRIMARY KEY, number integer NOT NULL UNIQUE)",
    "INSERT INTO deposits_ftsowner (user_id, number) "
    "SELECT user_id, row_number() OVER (ORDER BY min(rowid)) FROM deposits_deposit GROUP BY user_id",
    "CREATE VIRTUAL TABLE deposits_fts USING fts5(content, scope_note, content='', tokenize='porter unicode61')",
    f"INSERT INTO deposits_fts (rowid, content, scope_note) "
    f"SELECT {OWNER_START.format(user='d.user_id')} + d.rowid, d.content, d.scope_note FROM deposits_deposit d",
    "CREATE TRIGGER deposits_fts_insert AFTER INSERT ON deposits_deposit BEGIN "
    "INSERT OR IGNORE INTO deposits_ftsowner (user_id, number) "
    "VALUES (new.user_id, (SELECT coalesce(max(number), 0) + 1 FROM deposits_ftsowner)); "
    f"INSERT INTO deposits_fts (rowid, content, scope_note) "
    f"VALUES ({OWNER_START.format(user='new.user_id')} + new.rowid, new.content, new.scope_note); END",
    # A contentless table forgets a row when told the values it indexed.
    "CREATE TRIGGER deposits_fts_delete AFTER DELETE ON deposits_deposit BEGIN "
    "INSERT INTO deposits_fts (deposits_fts, rowid, content, scope_note) "
    f"VALUES ('delete', {OWNER_START.format(user='old.user_id')} + old.rowid, old.content, old.scope_note); END",
]
SQLITE_REVERSE = [
    "DROP TRIGGER IF EXISTS deposits_fts_delete",
    "DROP TRIGGER IF EXISTS deposits_fts_insert",
    "DROP TABLE IF EXISTS deposits_fts",
    "DROP TABLE IF EXISTS deposits_ftsowner",
    "CREATE VIRTUAL TABLE deposits_fts USING fts5(content, scope_note, content='deposits_deposit', "
    "content_rowid='rowid', tokenize='porter unicode61')",
    "CREATE TRIGGER deposits_fts_insert AFTER INSERT ON deposits_deposit BEGIN "
    "INSERT INTO deposits_fts(rowid, content, scope_note) VALUES (new.rowid, new.content, new.scope_note); END",
    "CREATE TRIGGER deposits_fts_delete AFTER DELETE ON deposits_deposit BEGIN "
    "INSERT INTO deposits_fts(deposits_fts, rowid, content, scope_note) "
    "VALUES ('delete', old.rowid, old.content, old.scope_note); END",
    "INSERT INTO deposits_fts(deposits_fts) VALUES ('rebuild')",
]


def forward(apps, schema_editor):
    for statement in POSTGRES if schema_editor.connection.vendor == "postgresql" else SQLITE:
        schema_editor.execute(statement)


def backward(apps, schema_editor):
    for statement in POSTGRES_REVERSE if schema_editor.connection.vendor == "postgresql" else SQLITE_REVERSE:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("deposits", "0009_bag_rule_columns")]
    operations = [migrations.RunPython(forward, backward)]

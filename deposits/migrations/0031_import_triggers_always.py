"""The triggers that fire on inserting a deposit fire in every session, `replica` ones too.

An import writes a batch's deposits with `session_replication_role = replica` for that one
statement, so that their foreign key to their bag is checked once for the batch rather than row
by row (deposits.sql.import_batch.copy_deposits); the row triggers PostgreSQL keeps for foreign
keys fire only in `origin` sessions, and so would every other trigger but these. Nothing else
runs as `replica`: for every other write this changes nothing.
"""

from django.db import migrations

TRIGGERS = ("atlaso_copy_added_deposits", "deposits_embedding_pending")


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for trigger in TRIGGERS:
            schema_editor.execute(f"ALTER TABLE deposits_deposit ENABLE ALWAYS TRIGGER {trigger}")


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for trigger in TRIGGERS:
            schema_editor.execute(f"ALTER TABLE deposits_deposit ENABLE TRIGGER {trigger}")


class Migration(migrations.Migration):
    dependencies = [
        ("deposits", "0030_embeddings"),
    ]

    operations = [
        migrations.RunPython(forward, backward),
    ]

"""A copy of every deposit whose bag is in conflict, kept by PostgreSQL's triggers, for recall to
read its conflict bags' matches alone (`deposits.sql.conflict_copies` says why and how).

On PostgreSQL the table gains the text index column and its GIN index (recall reads the copies by
it, and by time through the btree indexes both databases get), the triggers, and the copies of
the deposits already in conflict bags. SQLite gets the bare table.
"""

from django.db import migrations, models

from deposits.sql.conflict_copies import TABLE, copy_all_sql, install_sql, uninstall_sql

# Small pending lists, as recall's other GIN indexes keep (deposits/0012).
POSTGRES = [
    f"ALTER TABLE {TABLE} ADD COLUMN search_vector tsvector NOT NULL",
    f"CREATE INDEX conflict_copy_user_search ON {TABLE} USING gin (user_id, search_vector) "
    "WITH (gin_pending_list_limit = 256)",
    *install_sql(),
    copy_all_sql(),
]


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in POSTGRES:
            schema_editor.execute(statement)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in uninstall_sql():
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("deposits", "0022_overflow_match_function")]

    operations = [
        migrations.CreateModel(
            name="ConflictCopy",
            fields=[
                ("id", models.UUIDField(primary_key=True, serialize=False)),
                ("user_id", models.CharField(max_length=128)),
                ("bag_id", models.CharField(max_length=40)),
                ("polarity", models.CharField(max_length=16)),
                ("created_at", models.DateTimeField()),
                ("retracted_at", models.DateTimeField(null=True)),
            ],
            options={
                "indexes": [
                    models.Index(fields=["user_id", "bag_id"], name="conflict_copy_user_bag"),
                    models.Index(
                        fields=["user_id", "polarity", "created_at"], name="conflict_copy_user_created"
                    ),
                ],
            },
        ),
        migrations.RunPython(forward, backward),
    ]

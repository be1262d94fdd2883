"""A covering index for the owners list: each owner's live counts read from the index alone.

PostgreSQL only (INCLUDE columns); the owners list groups every bag row by owner, and reading
these six columns from a narrow index is several times cheaper than the wide bag rows.
"""

from django.db import migrations

INDEX = "bag_owner_live_counts"


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {INDEX} ON deposits_scopebag (user_id) "
            "INCLUDE (live_positive, live_negative, live_cautionary, live_open, updated_at)"
        )


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    dependencies = [("deposits", "0006_conflict_episodes")]

    operations = [migrations.RunPython(create, drop)]

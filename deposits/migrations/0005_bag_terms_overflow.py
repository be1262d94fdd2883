"""PostgreSQL: a bag whose lexemes outgrow a tsvector (1 MB) is marked, and searched by deposit."""

from django.db import migrations


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            "ALTER TABLE deposits_scopebag ADD COLUMN terms_overflow boolean NOT NULL DEFAULT false"
        )


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("ALTER TABLE deposits_scopebag DROP COLUMN IF EXISTS terms_overflow")


class Migration(migrations.Migration):
    dependencies = [("deposits", "0004_bag_terms")]
    operations = [migrations.RunPython(forward, backward)]

"""A bag's lexemes grow in the counts' upsert through a function that marks the bag instead of
failing when they would outgrow a tsvector, so the upsert needs no savepoint (two round trips of
every write). The body is `deposits.services.bag_counts.terms_add_function_sql()`; a test holds
the installed body to it.
"""

from django.db import migrations

from deposits.services.bag_counts import TERMS_ADD_FUNCTION, terms_add_function_sql


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(terms_add_function_sql())


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP FUNCTION IF EXISTS {TERMS_ADD_FUNCTION}(boolean, tsvector, tsvector)")


class Migration(migrations.Migration):
    dependencies = [("deposits", "0016_hit_details_function")]

    operations = [migrations.RunPython(forward, backward)]

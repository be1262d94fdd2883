"""Recall's hit details through a PostgreSQL function whose plan each connection keeps.

The details are looked up by primary key, so a generic plan serves every call; as a statement of
its own it was planned again on every recall (`plan_cache_mode = force_custom_plan`, which the
recall reads need). The function's body is `deposits.selectors.hits.details_function_sql()`; a
test holds the installed body to it, so a change of the rules it spells needs a migration too.
"""

from django.db import migrations

from deposits.selectors.hits import DETAILS_FUNCTION, details_function_sql


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(details_function_sql())


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP FUNCTION IF EXISTS {DETAILS_FUNCTION}(text, uuid[])")


class Migration(migrations.Migration):
    dependencies = [("deposits", "0015_erased_keys_stay")]

    operations = [migrations.RunPython(forward, backward)]

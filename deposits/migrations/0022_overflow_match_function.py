"""Recall's aggregate asks a bag whose lexemes outgrew a tsvector through a function
(`deposits.search.postgres.overflow_match_function_sql()`; a test holds the installed body to it)
instead of a subquery of its own, which the statement planned on every recall.
"""

from django.db import migrations

from deposits.search.postgres import OVERFLOW_MATCH_FUNCTION, overflow_match_function_sql


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(overflow_match_function_sql())


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP FUNCTION IF EXISTS {OVERFLOW_MATCH_FUNCTION}(text, text, tsquery)")


class Migration(migrations.Migration):
    dependencies = [("deposits", "0021_deployment_open_conflicts")]

    operations = [migrations.RunPython(forward, backward)]

"""Recall's aggregate asks a bag whose lexemes outgrew a tsvector through a function instead of a
subquery of its own, which the statement planned on every recall.

The function as this migration made it (deposits/0024 replaced it with the one
`deposits.search.postgres.overflow_match_function_sql()` spells, which also asks a bag's chunks).
"""

from django.db import migrations

FUNCTION = """CREATE OR REPLACE FUNCTION atlaso_overflow_bag_matches(owner text, bag text, query tsquery)
RETURNS boolean
LANGUAGE plpgsql STABLE
AS $function$
BEGIN
    RETURN EXISTS (
        SELECT 1 FROM deposits_deposit d
        WHERE d.user_id = owner AND d.bag_id = bag AND d.search_vector @@ query AND d.retracted_at IS NULL AND NOT EXISTS (SELECT 1 FROM deposits_contradiction c WHERE c.old_deposit_id = d.id AND c.superseding)
    );
END
$function$"""


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FUNCTION)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP FUNCTION IF EXISTS atlaso_overflow_bag_matches(text, text, tsquery)")


class Migration(migrations.Migration):
    dependencies = [("deposits", "0021_deployment_open_conflicts")]

    operations = [migrations.RunPython(forward, backward)]

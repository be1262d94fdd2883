"""The revision log is append-only: the database refuses any UPDATE of a revision."""

from django.db import migrations

MESSAGE = "belief revisions are append-only: post a new observation instead"
POSTGRES = f"""
CREATE OR REPLACE FUNCTION beliefs_refuse_revision_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '{MESSAGE}';
END $$;
CREATE TRIGGER beliefs_revision_append_only BEFORE UPDATE ON beliefs_beliefrevision
    FOR EACH ROW EXECUTE FUNCTION beliefs_refuse_revision_update();
"""
POSTGRES_REVERSE = [
    "DROP TRIGGER IF EXISTS beliefs_revision_append_only ON beliefs_beliefrevision",
    "DROP FUNCTION IF EXISTS beliefs_refuse_revision_update()",
]
SQLITE = f"""
CREATE TRIGGER beliefs_revision_append_only BEFORE UPDATE ON beliefs_beliefrevision
BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END;
"""
SQLITE_REVERSE = ["DROP TRIGGER IF EXISTS beliefs_revision_append_only"]


def forward(apps, schema_editor):
    schema_editor.execute(POSTGRES if schema_editor.connection.vendor == "postgresql" else SQLITE)


def backward(apps, schema_editor):
    for statement in POSTGRES_REVERSE if schema_editor.connection.vendor == "postgresql" else SQLITE_REVERSE:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("beliefs", "0003_belief_log")]
    operations = [migrations.RunPython(forward, backward)]

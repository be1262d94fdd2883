"""The database itself refuses any change to a stored deposit but the soft-retract marker."""

from django.db import migrations

MUTABLE = ("retracted_at", "retracted_reason")
CLAIM_COLUMNS = (
    "id", "user_id", "bag_id", "content", "polarity", "evidence_grade",
    "scope_model", "scope_dataset", "scope_env", "scope_version", "scope_n", "scope_seed",
    "scope_note", "tags", "artifact_refs", "author", "author_role", "task_id", "channel",
    "repro_status", "belief_key", "belief_value", "created_at",
)  # fmt: skip
MESSAGE = "deposits are immutable: write a deposit that contradicts it instead"

POSTGRES = f"""
CREATE OR REPLACE FUNCTION deposits_refuse_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- The one allowed change: setting the soft-retract marker once, nothing else.
    IF OLD.retracted_at IS NULL AND NEW.retracted_at IS NOT NULL
       AND (to_jsonb(NEW) - 'retracted_at' - 'retracted_reason' - 'search_vector')
         = (to_jsonb(OLD) - 'retracted_at' - 'retracted_reason' - 'search_vector') THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION '{MESSAGE}';
END $$;
CREATE TRIGGER deposits_immutable BEFORE UPDATE ON deposits_deposit
    FOR EACH ROW EXECUTE FUNCTION deposits_refuse_update();
"""
POSTGRES_REVERSE = """
DROP TRIGGER IF EXISTS deposits_immutable ON deposits_deposit;
DROP FUNCTION IF EXISTS deposits_refuse_update();
"""

_unchanged = " AND ".join(f"NEW.{c} IS OLD.{c}" for c in CLAIM_COLUMNS)
SQLITE = f"""
CREATE TRIGGER deposits_immutable BEFORE UPDATE ON deposits_deposit
WHEN NOT (OLD.retracted_at IS NULL AND NEW.retracted_at IS NOT NULL AND {_unchanged})
BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END;
"""
SQLITE_REVERSE = "DROP TRIGGER IF EXISTS deposits_immutable;"


def forward(apps, schema_editor):
    sql = POSTGRES if schema_editor.connection.vendor == "postgresql" else SQLITE
    schema_editor.execute(sql)


def backward(apps, schema_editor):
    sql = POSTGRES_REVERSE if schema_editor.connection.vendor == "postgresql" else SQLITE_REVERSE
    for statement in filter(str.strip, sql.split(";")):
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("deposits", "0001_initial")]
    operations = [migrations.RunPython(forward, backward)]

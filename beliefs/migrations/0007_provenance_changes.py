"""Who changed provenance and when: the append-only ProvenanceChange history.

The database refuses an UPDATE of a change, as it does for belief revisions.
"""

from django.db import migrations, models

MESSAGE = "provenance changes are append-only: a new change is a new row"
POSTGRES = f"""
CREATE OR REPLACE FUNCTION beliefs_refuse_provenance_change_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '{MESSAGE}';
END $$;
CREATE TRIGGER beliefs_provenance_change_append_only BEFORE UPDATE ON beliefs_provenancechange
    FOR EACH ROW EXECUTE FUNCTION beliefs_refuse_provenance_change_update();
"""
POSTGRES_REVERSE = [
    "DROP TRIGGER IF EXISTS beliefs_provenance_change_append_only ON beliefs_provenancechange",
    "DROP FUNCTION IF EXISTS beliefs_refuse_provenance_change_update()",
]
SQLITE = f"""
CREATE TRIGGER beliefs_provenance_change_append_only BEFORE UPDATE ON beliefs_provenancechange
BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END;
"""
SQLITE_REVERSE = ["DROP TRIGGER IF EXISTS beliefs_provenance_change_append_only"]


def forward(apps, schema_editor):
    schema_editor.execute(POSTGRES if schema_editor.connection.vendor == "postgresql" else SQLITE)


def backward(apps, schema_editor):
    for statement in POSTGRES_REVERSE if schema_editor.connection.vendor == "postgresql" else SQLITE_REVERSE:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("beliefs", "0006_job_runs")]

    operations = [
        migrations.CreateModel(
            name="ProvenanceChange",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("at", models.DateTimeField()),
                ("actor", models.CharField(max_length=200)),
                (
                    "action",
                    models.CharField(
                        choices=[
                            ("tier_change", "tier changed"),
                            ("channel_create", "channel created"),
                            ("channel_change", "channel changed"),
                            ("api_key_create", "API key created"),
                            ("api_key_revoke", "API key revoked"),
                        ],
                        max_length=32,
                    ),
                ),
                ("subject", models.CharField(max_length=200)),
                ("detail", models.CharField(blank=True, max_length=500)),
                ("rebuild_run_id", models.UUIDField(null=True)),
            ],
            options={
                "ordering": ["-at", "-id"],
                "indexes": [
                    models.Index(fields=["-at", "-id"], name="provenance_change_at"),
                    models.Index(fields=["action", "subject", "-at"], name="provenance_change_subject"),
                ],
            },
        ),
        migrations.RunPython(forward, backward),
    ]

"""The tier, channel and API-key models, moved here from `beliefs` with their tables and rows.

State only: the tables `beliefs_provenancetier`, `beliefs_channel` and `beliefs_apikey` stay as
they are (the models name them with `db_table`), and beliefs 0010 drops the models from its
own state. The three content types are relabelled rather than made anew, so the permissions
granted on them (and the admin's history of changes) stay with the models.
"""

import django.db.models.deletion
from django.db import migrations, models

MODELS = ("provenancetier", "channel", "apikey")


def relabel(apps, old_label, new_label):
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        # A content type made for the new label already (a migrate run that stopped between the
        # two) would collide; the old one carries the permissions, so it is the one kept.
        if ContentType.objects.filter(app_label=old_label, model=model).exists():
            ContentType.objects.filter(app_label=new_label, model=model).delete()
            ContentType.objects.filter(app_label=old_label, model=model).update(app_label=new_label)


def forwards(apps, schema_editor):
    relabel(apps, "beliefs", "access")


def backwards(apps, schema_editor):
    relabel(apps, "access", "beliefs")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("beliefs", "0009_observation_keys"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="ProvenanceTier",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("name", models.SlugField(max_length=64, unique=True)),
                        ("ceiling", models.FloatField()),
                        ("description", models.CharField(blank=True, max_length=500)),
                    ],
                    options={
                        "db_table": "beliefs_provenancetier",
                        "ordering": ["-ceiling", "name"],
                        "constraints": [
                            models.CheckConstraint(
                                condition=models.Q(("ceiling__gt", 0), ("ceiling__lt", 1)),
                                name="tier_ceiling_strictly_between_0_and_1",
                            )
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="Channel",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("name", models.SlugField(max_length=64, unique=True)),
                        ("description", models.CharField(blank=True, max_length=500)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "tier",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="channels",
                                to="access.provenancetier",
                            ),
                        ),
                    ],
                    options={"db_table": "beliefs_channel", "ordering": ["name"]},
                ),
                migrations.CreateModel(
                    name="ApiKey",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("name", models.CharField(max_length=200)),
                        ("secret_hash", models.CharField(max_length=64, unique=True)),
                        ("display_prefix", models.CharField(max_length=16)),
                        ("permissions", models.JSONField(default=list)),
                        ("user_prefix", models.CharField(blank=True, default="", max_length=128)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("last_used_at", models.DateTimeField(blank=True, null=True)),
                        ("revoked_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "channel",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="api_keys",
                                to="access.channel",
                            ),
                        ),
                    ],
                    options={"db_table": "beliefs_apikey", "ordering": ["-created_at"]},
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(forwards, backwards),
    ]

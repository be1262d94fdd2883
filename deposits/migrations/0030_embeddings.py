"""Recall by meaning (recall-by-meaning.md): each deposit's vector per model, the models as the
embedding job calibrated them, each owner's newest vector per model, and the backlog of
deposits waiting for a vector.

The database puts every deposit it is given into the backlog, in the write's own transaction,
whatever path writes it (the services, the bulk paths, a seed or an import): a trigger on the
deposits. Nothing is embedded there; the embedding job takes the backlog out after the write.
The deposits already stored wait too: the job puts every deposit lacking a vector of its model
into the backlog the first time it runs with that model.
"""

import django.db.models.deletion
from django.db import migrations, models

POSTGRES = [
    """
CREATE OR REPLACE FUNCTION deposits_embedding_pending() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO deposits_embeddingpending (deposit_id, user_id, queued_at)
    SELECT added.id, added.user_id, now() FROM added;
    RETURN NULL;
END
$$""",
    "CREATE TRIGGER deposits_embedding_pending AFTER INSERT ON deposits_deposit "
    "REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION deposits_embedding_pending()",
]
POSTGRES_BACKWARD = [
    "DROP TRIGGER IF EXISTS deposits_embedding_pending ON deposits_deposit",
    "DROP FUNCTION IF EXISTS deposits_embedding_pending()",
]
# Django keeps SQLite's datetimes as text in this form.
SQLITE = [
    """
CREATE TRIGGER deposits_embedding_pending AFTER INSERT ON deposits_deposit
BEGIN
    INSERT INTO deposits_embeddingpending (deposit_id, user_id, queued_at)
    VALUES (NEW.id, NEW.user_id, strftime('%Y-%m-%d %H:%M:%f', 'now'));
END""",
]
SQLITE_BACKWARD = ["DROP TRIGGER IF EXISTS deposits_embedding_pending"]


def forward(apps, schema_editor):
    postgres = schema_editor.connection.vendor == "postgresql"
    for statement in POSTGRES if postgres else SQLITE:
        schema_editor.execute(statement)


def backward(apps, schema_editor):
    postgres = schema_editor.connection.vendor == "postgresql"
    for statement in POSTGRES_BACKWARD if postgres else SQLITE_BACKWARD:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("deposits", "0029_bag_references_indexed"),
    ]

    operations = [
        migrations.CreateModel(
            name="EmbeddingModel",
            fields=[
                ("name", models.CharField(max_length=200, primary_key=True, serialize=False)),
                ("dims", models.IntegerField()),
                ("floor", models.FloatField()),
                ("centre", models.BinaryField()),
                ("calibrated_at", models.DateTimeField()),
                ("backlog_filled_at", models.DateTimeField(null=True)),
            ],
        ),
        migrations.CreateModel(
            name="EmbeddingPending",
            fields=[
                (
                    "deposit",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="+",
                        serialize=False,
                        to="deposits.deposit",
                    ),
                ),
                ("user_id", models.CharField(max_length=128)),
                ("queued_at", models.DateTimeField()),
            ],
            options={
                "indexes": [
                    models.Index(fields=["user_id", "queued_at"], name="pending_user_queued"),
                    models.Index(fields=["queued_at"], name="pending_queued"),
                ],
            },
        ),
        migrations.CreateModel(
            name="DepositVector",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("user_id", models.CharField(max_length=128)),
                ("model", models.CharField(max_length=200)),
                ("code", models.BinaryField()),
                ("vector", models.BinaryField()),
                ("created_at", models.DateTimeField()),
                (
                    "deposit",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="deposits.deposit",
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["user_id", "model", "id"], name="vector_user_model")],
                "constraints": [
                    models.UniqueConstraint(fields=("deposit", "model"), name="vector_deposit_model")
                ],
            },
        ),
        migrations.CreateModel(
            name="VectorHead",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "user_id", "model", blank=True, editable=False, primary_key=True, serialize=False
                    ),
                ),
                ("user_id", models.CharField(max_length=128)),
                ("model", models.CharField(max_length=200)),
                ("last_id", models.BigIntegerField()),
            ],
        ),
        migrations.RunPython(forward, backward),
    ]

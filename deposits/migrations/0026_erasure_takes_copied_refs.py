"""Erasure takes with it the artifact refs a resolution deposit copied from the erased deposit.

A resolution deposit's artifact_refs are the union of the kept deposits' (dashboard.md, The
resolution deposit); each kept deposit is now recorded beside it (`ResolutionKept`), so erasing one
can drop from the resolution deposit the refs no other kept deposit gave. The database's rule for
deposits lets that one change through: artifact refs dropped, none added, nothing else changed.

The resolutions written before this migration are given their kept deposits from what the bag
holds: the deposits of the side that held, written before the resolution and not retracted by
then, that it did not contradict and whose every ref it copied.
"""

import django.db.models.deletion
from django.db import migrations, models

MESSAGE = "deposits are immutable: write a deposit that contradicts it instead"
CLAIM_COLUMNS = (
    "id", "user_id", "bag_id", "content", "polarity", "evidence_grade",
    "scope_model", "scope_dataset", "scope_env", "scope_version", "scope_n", "scope_seed",
    "scope_note", "tags", "artifact_refs", "author", "author_role", "task_id", "channel",
    "repro_status", "belief_key", "belief_value", "created_at",
)  # fmt: skip

POSTGRES = f"""
CREATE OR REPLACE FUNCTION deposits_refuse_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Setting the soft-retract marker once, nothing else.
    IF OLD.retracted_at IS NULL AND NEW.retracted_at IS NOT NULL
       AND (to_jsonb(NEW) - 'retracted_at' - 'retracted_reason' - 'search_vector')
         = (to_jsonb(OLD) - 'retracted_at' - 'retracted_reason' - 'search_vector') THEN
        RETURN NEW;
    END IF;
    -- Dropping artifact refs, nothing else: an erasure takes those copied from the erased deposit.
    IF jsonb_typeof(NEW.artifact_refs) = 'array' AND NEW.artifact_refs <@ OLD.artifact_refs
       AND (to_jsonb(NEW) - 'artifact_refs' - 'search_vector')
         = (to_jsonb(OLD) - 'artifact_refs' - 'search_vector') THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION '{MESSAGE}';
END $$;
"""
# 0002's function, which the backward step puts back.
POSTGRES_BEFORE = f"""
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
"""


def _sqlite_trigger(*, refs_may_drop: bool) -> str:
    unchanged = " AND ".join(f"NEW.{c} IS OLD.{c}" for c in CLAIM_COLUMNS)
    retracted = f"(OLD.retracted_at IS NULL AND NEW.retracted_at IS NOT NULL AND {unchanged})"
    allowed = retracted
    if refs_may_drop:
        others = " AND ".join(
            f"NEW.{c} IS OLD.{c}" for c in (*CLAIM_COLUMNS, "retracted_at", "retracted_reason") if c != "artifact_refs"
        )
        dropped = (
            "json_type(NEW.artifact_refs) = 'array' AND NOT EXISTS (SELECT 1 FROM json_each(NEW.artifact_refs) n "
            "WHERE n.value NOT IN (SELECT o.value FROM json_each(OLD.artifact_refs) o))"
        )
        allowed = f"{retracted} OR ({others} AND {dropped})"
    return f"""CREATE TRIGGER deposits_immutable BEFORE UPDATE ON deposits_deposit
WHEN NOT ({allowed})
BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END;"""


#: The trigger as this migration leaves it (deposits/0027 drops and recreates it on SQLite).
SQLITE = _sqlite_trigger(refs_may_drop=True)


def _install(schema_editor, *, refs_may_drop: bool) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES if refs_may_drop else POSTGRES_BEFORE)
        return
    schema_editor.execute("DROP TRIGGER IF EXISTS deposits_immutable")
    schema_editor.execute(_sqlite_trigger(refs_may_drop=refs_may_drop))


def forward(apps, schema_editor):
    _install(schema_editor, refs_may_drop=True)
    Deposit = apps.get_model("deposits", "Deposit")
    Resolution = apps.get_model("deposits", "Resolution")
    ResolutionKept = apps.get_model("deposits", "ResolutionKept")
    for resolution in Resolution.objects.select_related("deposit").iterator(chunk_size=500):
        copied = set(resolution.deposit.artifact_refs or [])
        overruled = Deposit.objects.filter(edges_in__new_deposit_id=resolution.deposit_id)
        kept = (
            Deposit.objects.filter(
                user_id=resolution.user_id,
                bag_id=resolution.bag_id,
                polarity=resolution.side,
                created_at__lt=resolution.created_at,
            )
            .exclude(pk=resolution.deposit_id)
            .exclude(pk__in=overruled.values("pk"))
            .exclude(retracted_at__lte=resolution.created_at)
        )
        ResolutionKept.objects.bulk_create(
            [
                ResolutionKept(resolution=resolution, deposit_id=deposit.pk, user_id=resolution.user_id)
                for deposit in kept.only("pk", "artifact_refs")
                if set(deposit.artifact_refs or []) <= copied
            ],
            ignore_conflicts=True,
        )


def backward(apps, schema_editor):
    _install(schema_editor, refs_may_drop=False)


class Migration(migrations.Migration):
    dependencies = [("deposits", "0025_episode_waiting_since")]

    operations = [
        migrations.CreateModel(
            name="ResolutionKept",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("user_id", models.CharField(max_length=128)),
                (
                    "deposit",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="deposits.deposit",
                    ),
                ),
                (
                    "resolution",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="kept_deposits",
                        to="deposits.resolution",
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["user_id", "deposit"], name="resolution_kept_user_deposit")],
                "constraints": [
                    models.UniqueConstraint(fields=("resolution", "deposit"), name="resolution_kept_unique")
                ],
            },
        ),
        migrations.RunPython(forward, backward),
    ]

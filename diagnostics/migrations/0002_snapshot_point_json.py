"""Each snapshot keeps its wire form as a trend point, written once with the row.

Existing snapshots get theirs here, in batches; the rendering is the model's at the time of
this migration (a migration cannot call model methods), the same fields in the same order.
"""

import json
from datetime import UTC

from django.db import migrations, models

FIELDS = (
    "fmi",
    "coverage",
    "precision",
    "resolution",
    "density",
    "deposit_count",
    "bag_count",
    "conflict_bag_count",
    "uncertain_belief_count",
    "recall_count",
)
BATCH = 2000


def render(snapshot) -> str:
    point = {"taken_at": snapshot.taken_at.astimezone(UTC).isoformat(timespec="microseconds")}
    point.update((name, getattr(snapshot, name)) for name in FIELDS)
    if snapshot.user_id is None:
        point["owner_count"] = snapshot.owner_count
    return json.dumps(point)


def backfill(apps, schema_editor):
    Snapshot = apps.get_model("diagnostics", "Snapshot")
    last = 0
    while True:
        batch = list(Snapshot.objects.filter(pk__gt=last).order_by("pk")[:BATCH])
        if not batch:
            return
        for snapshot in batch:
            snapshot.point_json = render(snapshot)
        Snapshot.objects.bulk_update(batch, ["point_json"])
        last = batch[-1].pk


class Migration(migrations.Migration):
    dependencies = [("diagnostics", "0001_snapshots")]

    operations = [
        migrations.AddField(
            model_name="snapshot",
            name="point_json",
            field=models.TextField(default="", editable=False),
            preserve_default=False,
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="snapshot",
            constraint=models.CheckConstraint(condition=~models.Q(point_json=""), name="snapshot_has_point"),
        ),
    ]

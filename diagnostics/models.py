"""Diagnostics kept over time: a snapshot of an owner's (or the deployment's) health."""

from __future__ import annotations

import json

from django.db import models

from atlaso_site.lib.timefmt import isoformat
from diagnostics.joined_points import forget_joined_points

# A snapshot point on the wire (diagnostics.md), in order; the deployment's adds owner_count.
WIRE_POINT_FIELDS = (
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


class SnapshotQuerySet(models.QuerySet["Snapshot"]):
    def bulk_create(self, objs, *args, **kwargs):  # type: ignore[no-untyped-def]
        objs = list(objs)
        for snapshot in objs:
            snapshot.point_json = snapshot.render_point()
        created = super().bulk_create(objs, *args, **kwargs)
        forget_joined_points()
        return created


class Snapshot(models.Model):
    """The FMI, its pillars and the counts behind them, for one owner or (user_id null) all."""

    user_id = models.CharField(max_length=128, null=True)
    taken_at = models.DateTimeField()
    window_days = models.IntegerField()
    fmi = models.IntegerField()
    coverage = models.FloatField()
    precision = models.FloatField()
    resolution = models.FloatField()
    density = models.FloatField()
    deposit_count = models.IntegerField()
    bag_count = models.IntegerField()
    conflict_bag_count = models.IntegerField()
    uncertain_belief_count = models.IntegerField()
    recall_count = models.IntegerField()
    # The deployment's only: owners with at least one live deposit.
    owner_count = models.IntegerField(null=True)
    # The newest snapshot of its owner: what the owners list and the next run compare against.
    is_latest = models.BooleanField(default=True)
    # The snapshot as a trend point on the wire, written once with the row (a snapshot never
    # changes): a 90-day trend is 8,640 points, and joining stored points is several times
    # cheaper than reading and formatting their eleven columns on every request.
    # tests/diagnostics/test_api_history.py pins it to the API schema's own rendering.
    point_json = models.TextField(editable=False)

    objects = SnapshotQuerySet.as_manager()

    class Meta:
        indexes = [
            models.Index(fields=["user_id", "taken_at"], name="snapshot_user_taken"),
            models.Index(fields=["user_id"], condition=models.Q(is_latest=True), name="snapshot_latest"),
            # The deployment's trend read from the index alone (PostgreSQL; the INCLUDE is skipped
            # elsewhere): its snapshots lie one per run among every owner's, so reading them from
            # the table visits a page per point (at 8,640 points: 7 ms against 21).
            models.Index(
                fields=["taken_at", "id"],
                include=["point_json"],
                condition=models.Q(user_id__isnull=True),
                name="snapshot_deployment_points",
            ),
        ]
        constraints = [
            models.CheckConstraint(condition=~models.Q(point_json=""), name="snapshot_has_point"),
        ]

    def save(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.point_json = self.render_point()
        super().save(*args, **kwargs)
        forget_joined_points()

    @property
    def is_deployment(self) -> bool:
        return self.user_id is None

    def render_point(self) -> str:
        """The wire form of this snapshot as a point of a trend (diagnostics.md, API)."""
        point: dict[str, object] = {"taken_at": isoformat(self.taken_at)}
        point.update((name, getattr(self, name)) for name in WIRE_POINT_FIELDS)
        if self.is_deployment:
            point["owner_count"] = self.owner_count
        return json.dumps(point)

"""Diagnostics kept over time: a snapshot of an owner's (or the deployment's) health."""

from __future__ import annotations

from django.db import models


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

    class Meta:
        indexes = [
            models.Index(fields=["user_id", "taken_at"], name="snapshot_user_taken"),
            models.Index(fields=["user_id"], condition=models.Q(is_latest=True), name="snapshot_latest"),
        ]

    @property
    def is_deployment(self) -> bool:
        return self.user_id is None

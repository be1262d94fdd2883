"""The deployment's counts the writes keep (`deposits.services.owners`)."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Subquery

from deposits.models import ConflictEpisode, DeploymentTally


def open_conflict_count() -> int:
    """How many conflicts are open in the deployment: one row read (none before the first write)."""
    return DeploymentTally.objects.filter(id=1).values_list("open_conflicts", flat=True).first() or 0


def oldest_open_conflict() -> Subquery:
    """When the deployment's oldest open conflict opened, as an expression over the tally row.

    Read by the open conflicts' index, for a query over the deployment's tally row.
    """
    oldest = ConflictEpisode.objects.filter(ended_at__isnull=True).order_by("started_at", "id")
    return Subquery(oldest.values("started_at")[:1])


def open_conflicts_now() -> tuple[int, datetime | None]:
    """How many conflicts are open in the deployment, and since when the oldest, in one query.

    The count the writes keep, and the oldest by the open conflicts' index.
    """
    row = (
        DeploymentTally.objects.filter(id=1)
        .annotate(oldest=oldest_open_conflict())
        .values_list("open_conflicts", "oldest")
        .first()
    )
    return (0, None) if row is None else row

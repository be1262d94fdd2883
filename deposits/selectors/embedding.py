"""Reads for recall by meaning: the current model as calibrated, coverage and the embedding backlog."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.db import connection
from django.db.models import Min
from django.utils import timezone

from deposits.embedders import configured
from deposits.models import EmbeddingModel, EmbeddingPending, OwnerTally
from deposits.search.meaning import ModelInfo

# A process reads a model's calibration at most this often (it changes only when the model does).
MODEL_READ_SECONDS = 60.0
_models: dict[tuple[str, str], tuple[float, ModelInfo | None]] = {}
# Up to this many waiting, the live ones among them are counted exactly.
EXACT_WAITING = 50_000


def model_info(name: str) -> ModelInfo | None:
    """The calibration of model `name`, or None before the embedding job first ran with it."""
    key = (connection.settings_dict["NAME"], name)
    read_at, info = _models.get(key, (-MODEL_READ_SECONDS, None))
    if info is None or time.monotonic() - read_at > MODEL_READ_SECONDS:
        row = EmbeddingModel.objects.filter(name=name).first()
        info = (
            None
            if row is None
            else ModelInfo(
                name=row.name,
                dims=row.dims,
                floor=row.floor,
                centre=np.frombuffer(bytes(row.centre), dtype=np.float32).copy(),
            )
        )
        _models[key] = (time.monotonic(), info)
    return info


def forget_model_info() -> None:
    """Read every model's calibration afresh (after the job calibrated one; tests)."""
    _models.clear()


@dataclass(frozen=True, slots=True)
class EmbeddingStatus:
    """Where recall by meaning stands, for the deployment or one owner: the pages' one source."""

    embedder: str  # the ATLASO_EMBEDDER setting: local, openai or none
    model: str | None  # the embedder and model vectors are made with now
    problem: str | None  # why there is no embedder although one was asked for
    live: int  # live deposits
    waiting: int  # deposits in the backlog (retracted ones leave it at the next batch)
    waiting_live: int  # live deposits among them
    oldest_waiting: datetime | None

    @property
    def enabled(self) -> bool:
        return self.model is not None

    @property
    def covered(self) -> int:
        """Live deposits with a vector of the current model."""
        return max(0, self.live - self.waiting_live)

    @property
    def coverage(self) -> float:
        """Share of live deposits with a vector of the current model (1.0 with none live)."""
        return 1.0 if self.live == 0 else self.covered / self.live

    @property
    def oldest_wait_seconds(self) -> float | None:
        if self.oldest_waiting is None:
            return None
        return max(0.0, (timezone.now() - self.oldest_waiting).total_seconds())


def embedding_status(user_id: str | None = None) -> EmbeddingStatus:
    """Coverage and the backlog of the deployment, or of one owner.

    The backlog holds every deposit lacking a vector of the current model (deposits/0028 and the
    job keep it so), so coverage is the live deposits less the live ones waiting: counted over
    the backlog, never over the deposits. Past EXACT_WAITING waiting (a model change, a first
    backfill) every waiting deposit is counted as live: the few retracted or superseded ones
    among them leave the backlog as the job reaches them.
    """
    from django.conf import settings

    found = configured()
    pending = EmbeddingPending.objects.all()
    tallies = OwnerTally.objects.all()
    if user_id is not None:
        pending = pending.filter(user_id=user_id)
        tallies = tallies.filter(user_id=user_id)
    live = sum(tallies.values_list("live_deposits", flat=True)) if user_id else _deployment_live()
    waiting = pending.count()
    waiting_live = waiting
    oldest = None
    if 0 < waiting <= EXACT_WAITING:
        waiting_live = (
            pending.filter(deposit__retracted_at__isnull=True)
            .exclude(deposit__edges_in__superseding=True)
            .count()
        )
    if waiting:
        oldest = pending.aggregate(oldest=Min("queued_at"))["oldest"]
    return EmbeddingStatus(
        embedder=settings.ATLASO_EMBEDDER,
        model=found.embedder.name if found.embedder is not None else None,
        problem=found.problem,
        live=live,
        waiting=waiting,
        waiting_live=waiting_live,
        oldest_waiting=oldest,
    )


def _deployment_live() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(sum(live_deposits), 0) FROM deposits_ownertally")
        return int(cursor.fetchone()[0])

"""Reads for recall by meaning: the current model as calibrated, coverage and the embedding backlog."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
from django.db import connection
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from deposits.embedders import configured
from deposits.models import EmbeddingModel, EmbeddingPending
from deposits.search.meaning import ModelInfo
from deposits.sql.rules import live_sql

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
    """Coverage and the backlog of the deployment, or of one owner, in one statement.

    With no embedder there is no statement at all: the pages then say recall by meaning is off.

    The backlog holds every deposit lacking a vector of the current model (deposits/0028 and the
    job keep it so), so coverage is the live deposits less the live ones waiting: counted over
    the backlog, never over the deposits. Past EXACT_WAITING waiting (a model change, a first
    backfill) every waiting deposit is counted as live: the few retracted or superseded ones
    among them leave the backlog as the job reaches them.
    """
    from django.conf import settings

    found = configured()
    if found.embedder is None:
        return EmbeddingStatus(settings.ATLASO_EMBEDDER, None, found.problem, 0, 0, 0, None)
    owner = " WHERE p.user_id = %s" if user_id else ""
    tallied = " WHERE t.user_id = %s" if user_id else ""
    sql = f"""
SELECT (SELECT coalesce(sum(t.live_deposits), 0) FROM deposits_ownertally t{tallied}),
       (SELECT count(*) FROM (SELECT 1 FROM deposits_embeddingpending p{owner} LIMIT {EXACT_WAITING + 1}) w),
       (SELECT min(p.queued_at) FROM deposits_embeddingpending p{owner}),
       (SELECT count(*) FROM (
            SELECT 1 FROM deposits_embeddingpending p JOIN deposits_deposit d ON d.id = p.deposit_id
            {owner or "WHERE TRUE"} AND {live_sql("d")} LIMIT {EXACT_WAITING + 1}) l)
"""
    params = [user_id] * 4 if user_id else []
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        live, waiting, oldest, waiting_live = cursor.fetchone()
    if waiting > EXACT_WAITING:
        waiting = _count_waiting(user_id)
        waiting_live = waiting
    if isinstance(oldest, str):  # SQLite through a raw cursor
        oldest = parse_datetime(oldest)
    if oldest is not None and timezone.is_naive(oldest):
        oldest = timezone.make_aware(oldest, UTC)
    return EmbeddingStatus(
        embedder=settings.ATLASO_EMBEDDER,
        model=found.embedder.name,
        problem=None,
        live=int(live),
        waiting=int(waiting),
        waiting_live=int(waiting_live),
        oldest_waiting=oldest,
    )


def _count_waiting(user_id: str | None) -> int:
    pending = EmbeddingPending.objects.all()
    return (pending.filter(user_id=user_id) if user_id else pending).count()

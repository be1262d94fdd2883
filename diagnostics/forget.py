"""Forgetting an owner whole (portability.md), in one transaction.

Every row that holds its id or its content goes; its idempotency keys stay as tombstones that name
neither it nor the key.

The tables are found, not listed: every model of every app with a `user_id` column, deleted
referencing tables first, so a table added later is forgotten with the others. Each app's own
part runs around that sweep: the deposit store files its keys and gives up the owner's share
of the deployment's counts (deposits.services.forget), the belief log files its observation
keys (beliefs.portability), and job records that name the owner lose the mention.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.apps import apps
from django.db import connection, models, transaction
from django.utils import timezone

from atlaso_site.job_runs.services import job_runs_forget_owner
from atlaso_site.lib.idempotency import WINDOW
from beliefs.models import Belief, BeliefRevision, CalibrationOutcome, ObservationKey
from beliefs.portability import beliefs_forget_owner
from deposits.domain.validation import validate_user_id
from deposits.models import Contradiction, Deposit, IdempotencyEntry, RecallLog, ScopeBag
from deposits.services.forget import store_forget_begin, store_forget_end
from diagnostics.joined_points import forget_joined_points
from diagnostics.models import Snapshot


@dataclass(frozen=True, slots=True)
class ForgetResult:
    """What went: the owner's deposits, edges, observations and beliefs, and the keys kept as tombstones."""

    user_id: str
    deposits: int
    edges: int
    observations: int
    beliefs: int
    keys_tombstoned: int


@dataclass(frozen=True, slots=True)
class ForgetPreview:
    """What forgetting the owner would remove, for the page that asks an operator to confirm it."""

    deposits: int
    edges: int
    bags: int
    observations: int
    beliefs: int
    outcomes: int
    snapshots: int
    recalls: int
    keys: int

    @property
    def holds_anything(self) -> bool:
        return any(getattr(self, name) for name in self.__slots__)


def forget_preview(*, user_id: str, now: datetime | None = None) -> ForgetPreview:
    """The owner's rows, counted, that `owner_forget` would delete (its keys: those in their window)."""
    now = now or timezone.now()
    since = now - WINDOW
    return ForgetPreview(
        deposits=Deposit.objects.filter(user_id=user_id).count(),
        edges=Contradiction.objects.filter(user_id=user_id).count(),
        bags=ScopeBag.objects.filter(user_id=user_id).count(),
        observations=BeliefRevision.objects.filter(user_id=user_id).count(),
        beliefs=Belief.objects.filter(user_id=user_id).count(),
        outcomes=CalibrationOutcome.objects.filter(user_id=user_id).count(),
        snapshots=Snapshot.objects.filter(user_id=user_id).count(),
        recalls=RecallLog.objects.filter(user_id=user_id).count(),
        keys=IdempotencyEntry.objects.filter(user_id=user_id, created_at__gt=since).count()
        + ObservationKey.objects.filter(user_id=user_id, created_at__gt=since).count(),
    )


def _has_owner(model: type[models.Model]) -> bool:
    return any(f.concrete and f.name == "user_id" for f in model._meta.get_fields())


def _points_at(model: type[models.Model], among: list[type[models.Model]]) -> set[type[models.Model]]:
    """The other models of `among` that `model`'s foreign keys point at."""
    return {
        f.related_model
        for f in model._meta.get_fields()
        if f.concrete and f.is_relation and f.related_model in among and f.related_model is not model
    }


def owner_models() -> list[type[models.Model]]:
    """Every model with a `user_id` column, in an order its rows can be deleted in.

    A model whose foreign key points at another of them comes before it.
    """
    found = [model for model in apps.get_models() if _has_owner(model)]
    targets = {model: _points_at(model, found) for model in found}
    ordered: list[type[models.Model]] = []
    placed: set[type[models.Model]] = set()

    def place(model: type[models.Model]) -> None:
        if model in placed:
            return
        placed.add(model)
        # Whatever points at this model is deleted before it.
        for other in sorted(found, key=lambda m: m._meta.label):
            if model in targets[other]:
                place(other)
        ordered.append(model)

    for model in sorted(found, key=lambda m: m._meta.label):
        place(model)
    # `place` put each model after the models pointing at it; deletes run in that order.
    return ordered


def owner_forget(*, user_id: str, now: datetime | None = None) -> ForgetResult:
    """Forget `user_id` whole; forgetting an owner that holds nothing changes nothing."""
    validate_user_id(user_id)
    now = now or timezone.now()
    with transaction.atomic():
        store = store_forget_begin(user_id=user_id, now=now)
        beliefs = beliefs_forget_owner(user_id=user_id, now=now)
        with connection.cursor() as cursor:
            for model in owner_models():
                cursor.execute(f"DELETE FROM {model._meta.db_table} WHERE user_id = %s", [user_id])
        store_forget_end(user_id=user_id)
        job_runs_forget_owner(user_id)
    # Its trends joined in this process go with its snapshots.
    forget_joined_points()
    return ForgetResult(
        user_id=user_id,
        deposits=store.deposits,
        edges=store.edges,
        observations=beliefs.observations,
        beliefs=beliefs.beliefs,
        keys_tombstoned=store.keys_tombstoned + beliefs.keys_tombstoned,
    )

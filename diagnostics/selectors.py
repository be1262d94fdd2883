"""Reads for diagnostics: an owner's health and the peek view, each in a few aggregate queries."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count, F, FloatField, Q, Sum
from django.db.models.functions import Cast, Greatest
from django.utils import timezone

from beliefs.models import CalibrationOutcome
from deposits.domain.bags import CONFLICT_MIN_KINDS, THIN_MAX_DIRECTIONAL
from deposits.domain.types import Deposit as DepositRecord
from deposits.models import Deposit, RecallLog, ScopeBag
from deposits.selectors import deposit_records
from diagnostics.domain.calibration import DiagramBin, Scored, brier, ece, reliability_diagram
from diagnostics.domain.fmi import Diagnostics, Pillars


def _bag_aggregates(user_id: str) -> dict[str, Any]:
    bags = (
        ScopeBag.objects.filter(user_id=user_id)
        .with_rules()
        .annotate(
            size=F("directional") + F("live_open"),
            dominant=Greatest("live_positive", "live_negative", "live_cautionary"),
        )
    )
    # Precision looks at every bag that is not thin evidence, whatever its sides.
    multi = Q(directional__gt=THIN_MAX_DIRECTIONAL)
    return bags.aggregate(
        live_bags=Count("id", filter=Q(size__gt=0)),
        singleton_bags=Count("id", filter=Q(size=1)),
        multi_bags=Count("id", filter=multi),
        agreement_sum=Sum(Cast("dominant", FloatField()) / Cast("directional", FloatField()), filter=multi),
        split_bags=Count("id", filter=Q(kept_kinds__gte=CONFLICT_MIN_KINDS)),
        resolved_bags=Count("id", filter=Q(kept_kinds__gte=CONFLICT_MIN_KINDS, kept_superseded__gt=0)),
        deposit_count=Sum("size"),
    )


def health(*, user_id: str, window_days: int = 30, now: datetime | None = None) -> Diagnostics:
    """The owner's FMI over the last `window_days` of recalls, from live bag counts."""
    now = now or timezone.now()
    totals = _bag_aggregates(user_id)
    recalls = RecallLog.objects.filter(
        user_id=user_id, created_at__gt=now - timedelta(days=window_days)
    ).aggregate(total=Count("id"), confident=Count("id", filter=Q(returned_confident=True)))
    coverage = recalls["confident"] / recalls["total"] if recalls["total"] else 0.0
    precision = totals["agreement_sum"] / totals["multi_bags"] if totals["multi_bags"] else 1.0
    resolution = totals["resolved_bags"] / totals["split_bags"] if totals["split_bags"] else 1.0
    density = 1 - totals["singleton_bags"] / totals["live_bags"] if totals["live_bags"] else 0.0
    # deposit_count is live deposits; the bag counts already hold exactly that.
    return Diagnostics(
        pillars=Pillars(coverage=coverage, precision=precision, resolution=resolution, density=density),
        window_days=window_days,
        deposit_count=int(totals["deposit_count"] or 0),
    )


RECENT = timedelta(days=7)


@dataclass(frozen=True, slots=True)
class PeekView:
    """A glance at an owner: newest live deposits, how many are kept, FMI, recent conflict."""

    user_id: str
    deposits: list[DepositRecord]
    total_count: int
    fmi: int
    has_recent_disagreements: bool


def peek(*, user_id: str, limit: int = 10, now: datetime | None = None) -> PeekView:
    """The newest live deposits, the count of non-retracted ones, FMI, and recent conflict."""
    now = now or timezone.now()
    live = Deposit.objects.filter(user_id=user_id).live()
    newest = list(live.order_by("-created_at", "-id")[:limit])
    total = Deposit.objects.filter(user_id=user_id).not_retracted().count()
    conflict_bags = (
        ScopeBag.objects.filter(user_id=user_id, last_deposit_at__gte=now - RECENT).in_conflict().values("id")
    )
    recent_conflict = live.filter(bag_id__in=conflict_bags, created_at__gte=now - RECENT).exists()
    return PeekView(
        user_id=user_id,
        deposits=deposit_records(newest),
        total_count=total,
        fmi=health(user_id=user_id, now=now).fmi,
        has_recent_disagreements=recent_conflict,
    )


@dataclass(frozen=True, slots=True)
class TierCalibration:
    outcomes: int
    brier: float | None
    ece: float | None


@dataclass(frozen=True, slots=True)
class Calibration:
    """How well belief probabilities matched confirmed outcomes, overall and per tier."""

    outcomes: int
    brier: float | None
    ece: float | None
    per_tier: dict[str, TierCalibration]
    diagram: list[DiagramBin]
    is_frequency: bool

    @property
    def outcomes_needed(self) -> int:
        """How many more confirmations before probabilities may be read as frequencies."""
        return max(0, settings.BELIEF_CALIBRATION_MIN_OUTCOMES - self.outcomes)


def calibration() -> Calibration:
    """Brier and ECE over every confirmation outcome, for the deployment and per tier."""
    rows = list(CalibrationOutcome.objects.values_list("top_probability", "correct", "tier"))
    scored = [Scored(p, c) for p, c, _ in rows]
    per_tier: dict[str, list[Scored]] = {}
    for probability, correct, tier in rows:
        per_tier.setdefault(tier or "none", []).append(Scored(probability, correct))
    return Calibration(
        outcomes=len(scored),
        brier=brier(scored),
        ece=ece(scored),
        per_tier={
            tier: TierCalibration(outcomes=len(items), brier=brier(items), ece=ece(items))
            for tier, items in sorted(per_tier.items())
        },
        diagram=reliability_diagram(scored),
        is_frequency=len(scored) >= settings.BELIEF_CALIBRATION_MIN_OUTCOMES,
    )

"""Reads for diagnostics: an owner's health and the peek view, each in a few aggregate queries."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count, F, FloatField, Q, Sum
from django.db.models.functions import Cast, Greatest
from django.utils import timezone

from beliefs.models import CalibrationOutcome
from deposits.bags import present, with_conflict
from deposits.domain.types import DIRECTIONAL
from deposits.models import Contradiction, Deposit, RecallLog, ScopeBag
from deposits.selectors import deposit_records
from diagnostics.domain.calibration import Scored, brier, ece, reliability_diagram
from diagnostics.domain.fmi import Diagnostics, Pillars


def _bag_aggregates(user_id: str) -> dict[str, Any]:
    directional = F("live_positive") + F("live_negative") + F("live_cautionary")
    size = directional + F("live_open")
    kept_kinds = sum((present(f"kept_{p}") for p in DIRECTIONAL[1:]), start=present(f"kept_{DIRECTIONAL[0]}"))
    bags = ScopeBag.objects.filter(user_id=user_id).annotate(
        directional=directional,
        size=size,
        dominant=Greatest("live_positive", "live_negative", "live_cautionary"),
        kept_kinds=kept_kinds,
    )
    return bags.aggregate(
        live_bags=Count("id", filter=Q(size__gt=0)),
        singleton_bags=Count("id", filter=Q(size=1)),
        multi_bags=Count("id", filter=Q(directional__gte=2)),
        agreement_sum=Sum(
            Cast("dominant", FloatField()) / Cast("directional", FloatField()), filter=Q(directional__gte=2)
        ),
        split_bags=Count("id", filter=Q(kept_kinds__gte=2)),
        resolved_bags=Count("id", filter=Q(kept_kinds__gte=2, kept_superseded__gt=0)),
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


def peek(*, user_id: str, limit: int = 10, now: datetime | None = None) -> dict[str, Any]:
    """The newest live deposits, the count of non-retracted ones, FMI, and recent conflict."""
    now = now or timezone.now()
    superseded = Contradiction.objects.filter(user_id=user_id).values("old_deposit_id")
    live = Deposit.objects.filter(user_id=user_id, retracted_at__isnull=True).exclude(id__in=superseded)
    newest = list(live.order_by("-created_at", "-id")[:limit])
    total = Deposit.objects.filter(user_id=user_id, retracted_at__isnull=True).count()
    conflict_bags = (
        with_conflict(ScopeBag.objects.filter(user_id=user_id, last_deposit_at__gte=now - RECENT))
        .filter(directional_kinds__gte=2)
        .values("id")
    )
    recent_conflict = live.filter(bag_id__in=conflict_bags, created_at__gte=now - RECENT).exists()
    return {
        "kind": "peek_view",
        "user_id": user_id,
        "deposits": [record.to_dict() for record in deposit_records(newest)],
        "total_count": total,
        "fmi": health(user_id=user_id, now=now).fmi,
        "has_recent_disagreements": recent_conflict,
    }


def calibration() -> dict[str, Any]:
    """Brier and ECE over every confirmation outcome, for the deployment and per tier."""
    rows = list(CalibrationOutcome.objects.values_list("top_probability", "correct", "tier"))
    scored = [Scored(p, c) for p, c, _ in rows]
    per_tier: dict[str, list[Scored]] = {}
    for probability, correct, tier in rows:
        per_tier.setdefault(tier or "none", []).append(Scored(probability, correct))
    return {
        "kind": "calibration",
        "outcomes": len(scored),
        "brier": brier(scored),
        "ece": ece(scored),
        "per_tier": {
            tier: {"outcomes": len(items), "brier": brier(items), "ece": ece(items)}
            for tier, items in sorted(per_tier.items())
        },
        "diagram": reliability_diagram(scored),
        "is_frequency": len(scored) >= settings.BELIEF_CALIBRATION_MIN_OUTCOMES,
    }

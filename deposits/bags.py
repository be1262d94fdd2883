"""Reads of scope bags: statistics from the live counts, pages, and one bag's deposits."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db.models import Case, Exists, IntegerField, OuterRef, Q, QuerySet, Value, When

from beliefs.errors import ApiError
from deposits.domain.bags import BAG_ID_PATTERN, BagStats
from deposits.domain.types import DIRECTIONAL, FACETS, isoformat
from deposits.models import Contradiction, Deposit, ScopeBag
from deposits.selectors import deposit_records

MAX_BAG_DEPOSITS = 500


def stats_of(bag: ScopeBag) -> BagStats:
    return BagStats(
        positive=bag.live_positive,
        negative=bag.live_negative,
        cautionary=bag.live_cautionary,
        open=bag.live_open,
        newest=(bag.newest_positive_at, bag.newest_negative_at, bag.newest_cautionary_at),
    )


def bag_stats(bag_ids: Iterable[str]) -> dict[str, BagStats]:
    """Statistics for each bag, from its live counts: one query, no recount."""
    return {bag.id: stats_of(bag) for bag in ScopeBag.objects.filter(id__in=set(bag_ids))}


def is_resolved(bag: ScopeBag) -> bool:
    """Once split between directional polarities (superseded included) and corrected at least once."""
    held = sum(getattr(bag, f"kept_{p}") > 0 for p in DIRECTIONAL)
    return held >= 2 and bag.kept_superseded > 0


def bag_to_dict(bag: ScopeBag) -> dict[str, Any]:
    stats = stats_of(bag)
    return {
        "kind": "bag",
        "bag_id": bag.id,
        "user_id": bag.user_id,
        "scope": {facet: getattr(bag, facet) for facet in FACETS},
        "size": stats.size,
        "counts": stats.counts_dict(),
        "dominant_polarity": stats.dominant_polarity,
        "agreement_score": stats.agreement_score,
        "has_disagreement": stats.has_disagreement,
        "is_thin_evidence": stats.is_thin_evidence,
        "is_confident": stats.is_confident,
        "resolved": is_resolved(bag),
        "updated_at": isoformat(bag.updated_at),
    }


def present(column: str) -> Case:
    """1 when the count column is above zero, else 0."""
    return Case(When(**{f"{column}__gt": 0}, then=Value(1)), default=Value(0), output_field=IntegerField())


def with_conflict(bags: QuerySet[ScopeBag]) -> QuerySet[ScopeBag]:
    """Annotate `directional_kinds`: how many directional polarities a bag holds live (≥ 2 = conflict)."""
    return bags.annotate(
        directional_kinds=present("live_positive") + present("live_negative") + present("live_cautionary")
    )


@dataclass(frozen=True, slots=True)
class BagPage:
    items: list[ScopeBag]
    total: int

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "bag_page", "items": [bag_to_dict(b) for b in self.items], "total": self.total}


def bag_page(
    *,
    user_id: str,
    conflict: bool | None = None,
    facets: Mapping[str, Any] | None = None,
    limit: int = 50,
    offset: int = 0,
) -> BagPage:
    """An owner's bags holding live deposits, most recently changed first."""
    bags = with_conflict(ScopeBag.objects.filter(user_id=user_id)).filter(
        Q(live_positive__gt=0) | Q(live_negative__gt=0) | Q(live_cautionary__gt=0) | Q(live_open__gt=0)
    )
    for facet, value in (facets or {}).items():
        if value is not None:
            bags = bags.filter(**{facet: value})
    if conflict is not None:
        bags = bags.filter(directional_kinds__gte=2) if conflict else bags.filter(directional_kinds__lt=2)
    total = bags.count()
    return BagPage(items=list(bags.order_by("-updated_at", "id")[offset : offset + limit]), total=total)


def bag_detail(*, user_id: str, bag_id: str) -> dict[str, Any]:
    """A bag with its non-retracted deposits, newest first, each marked live or superseded."""
    # Checked before the query: PostgreSQL refuses text holding NUL, which a path may carry.
    well_formed = BAG_ID_PATTERN.fullmatch(bag_id) is not None
    bag = ScopeBag.objects.filter(user_id=user_id, id=bag_id).first() if well_formed else None
    if bag is None:
        raise ApiError("not_found", f"no bag {bag_id!r} for user {user_id!r}")
    rows = list(
        Deposit.objects.filter(user_id=user_id, bag_id=bag_id, retracted_at__isnull=True)
        .annotate(is_superseded=Exists(Contradiction.objects.filter(old_deposit=OuterRef("pk"))))
        .order_by("-created_at", "-id")[:MAX_BAG_DEPOSITS]
    )
    records = deposit_records(rows, with_state=True)
    deposits = []
    for row, record in zip(rows, records, strict=True):
        deposits.append({**record.to_dict(), "state": "superseded" if row.is_superseded else "live"})
    return {**bag_to_dict(bag), "deposits": deposits}

"""Reads of scope bags: statistics from the live counts, pages, and one bag's deposits."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from atlaso_site.lib.errors import not_found
from atlaso_site.lib.paging import Page
from deposits.domain import bags as rules
from deposits.domain.bags import BAG_ID_PATTERN, BagStats
from deposits.domain.types import DIRECTIONAL, FACETS, Scope
from deposits.domain.types import Deposit as DepositRecord
from deposits.models import Deposit, ScopeBag
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
    kept_kinds = sum(getattr(bag, f"kept_{p}") > 0 for p in DIRECTIONAL)
    return rules.is_resolved(kept_kinds, bag.kept_superseded)


@dataclass(frozen=True, slots=True)
class Bag:
    """One scope bag as readers see it: its six facets, live statistics and flags."""

    bag_id: str
    user_id: str
    scope: Scope
    stats: BagStats
    resolved: bool
    updated_at: datetime
    last_deposit_at: datetime | None

    @classmethod
    def of(cls, row: ScopeBag, **extra: Any) -> Any:
        return cls(
            bag_id=row.id,
            user_id=row.user_id,
            scope=Scope(**{facet: getattr(row, facet) for facet in FACETS}),
            stats=stats_of(row),
            resolved=is_resolved(row),
            updated_at=row.updated_at,
            last_deposit_at=row.last_deposit_at,
            **extra,
        )

    @property
    def size(self) -> int:
        return self.stats.size

    @property
    def counts(self) -> BagStats:
        return self.stats

    @property
    def dominant_polarity(self) -> str | None:
        return self.stats.dominant_polarity

    @property
    def agreement_score(self) -> float:
        return self.stats.agreement_score

    @property
    def has_disagreement(self) -> bool:
        return self.stats.has_disagreement

    @property
    def is_thin_evidence(self) -> bool:
        return self.stats.is_thin_evidence

    @property
    def is_confident(self) -> bool:
        return self.stats.is_confident


@dataclass(frozen=True, slots=True)
class BagDetail(Bag):
    """A bag and its non-retracted deposits, newest first, each `live` or `superseded`."""

    deposits: tuple[DepositRecord, ...] = ()


def bag_page(
    *,
    user_id: str,
    conflict: bool | None = None,
    facets: Mapping[str, Any] | None = None,
    limit: int = 50,
    offset: int = 0,
) -> Page[Bag]:
    """An owner's bags holding live deposits, most recently changed first."""
    bags = ScopeBag.objects.filter(user_id=user_id).holding_live()
    for facet, value in (facets or {}).items():
        if value is not None:
            bags = bags.filter(**{facet: value})
    if conflict is not None:
        bags = bags.in_conflict() if conflict else bags.not_in_conflict()
    total = bags.count()
    rows = bags.order_by("-updated_at", "id")[offset : offset + limit]
    return Page(items=[Bag.of(row) for row in rows], total=total, limit=limit, offset=offset)


def bag_detail(*, user_id: str, bag_id: str) -> BagDetail:
    """A bag with its non-retracted deposits, newest first, each marked live or superseded."""
    # Checked before the query: PostgreSQL refuses text holding NUL, which a path may carry.
    well_formed = BAG_ID_PATTERN.fullmatch(bag_id) is not None
    bag = ScopeBag.objects.filter(user_id=user_id, id=bag_id).first() if well_formed else None
    if bag is None:
        raise not_found(f"no bag {bag_id!r} for user {user_id!r}")
    rows = list(
        Deposit.objects.filter(user_id=user_id, bag_id=bag_id)
        .not_retracted()
        .order_by("-created_at", "-id")[:MAX_BAG_DEPOSITS]
    )
    return BagDetail.of(bag, deposits=tuple(deposit_records(rows, with_state=True)))

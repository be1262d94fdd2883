"""The review desk's reads: who is on which conflict, a reviewer's progress and skips, resolutions."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, Min, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from atlaso_site.lib.errors import not_found
from atlaso_site.lib.paging import Page, page_of
from deposits.domain.review import minutes_left
from deposits.models import ConflictEpisode, Contradiction, Resolution, ReviewClaim, ReviewSkip, ScopeBag
from deposits.selectors.bags import Bag
from deposits.selectors.owners import open_conflicts_now


@dataclass(frozen=True, slots=True)
class Claim:
    """Who is on a conflict, until when."""

    bag_id: str
    reviewer: str
    expires_at: datetime
    minutes_left: int

    def held_by_other(self, reviewer: str) -> bool:
        return self.reviewer != reviewer


def claims_on(bag_ids: Iterable[str], *, now: datetime | None = None) -> dict[str, Claim]:
    """The live claims on these bags, by bag id (an expired claim is no claim)."""
    at = now or timezone.now()
    rows = ReviewClaim.objects.filter(bag_id__in=set(bag_ids), expires_at__gt=at)
    return {
        row.bag_id: Claim(row.bag_id, row.reviewer, row.expires_at, minutes_left(row.expires_at, at))
        for row in rows
    }


def claim_on(bag_id: str, *, now: datetime | None = None) -> Claim | None:
    return claims_on([bag_id], now=now).get(bag_id)


def conflict_since(user_id: str, bag_id: str) -> datetime | None:
    """Since when the bag's open conflict has waited; None if it is not in conflict.

    Its episode's start, or the wait it carries on after an undone resolution.
    """
    episode = ConflictEpisode.objects.filter(user_id=user_id, bag_id=bag_id, ended_at__isnull=True).first()
    return None if episode is None else episode.waiting_from


@dataclass(frozen=True, slots=True)
class Progress:
    """The desk's progress line: conflicts left, resolved today, and since when the oldest waited.

    Open conflicts left in the filter (the one shown included), how many the reviewer resolved today
    (not undone), and since when the oldest has waited (an undone resolution's conflict counted from
    before it was resolved, as the desk shows it).
    """

    left: int
    resolved_today: int
    oldest_since: datetime | None
    held_by_others: int


def desk_progress(*, reviewer: str, owner_prefix: str = "", now: datetime | None = None) -> Progress:
    at = now or timezone.now()
    episodes = ConflictEpisode.objects.filter(ended_at__isnull=True)
    if owner_prefix:
        episodes = episodes.filter(user_id__startswith=owner_prefix)
        left, oldest = episodes.aggregate(
            n=Count("id"), oldest=Min(Coalesce("waiting_since", "started_at"))
        ).values()
    else:
        left, oldest = open_conflicts_now()
        # The oldest started episode may not be the longest waiting: one reopened by an Undo waits
        # since before (a partial index holds those few).
        carried = episodes.filter(waiting_since__isnull=False).aggregate(oldest=Min("waiting_since"))[
            "oldest"
        ]
        oldest = min((t for t in (oldest, carried) if t is not None), default=None)
    held = ReviewClaim.objects.filter(expires_at__gt=at, bag_id__in=episodes.values("bag_id")).exclude(
        reviewer=reviewer
    )
    midnight = timezone.localtime(at).replace(hour=0, minute=0, second=0, microsecond=0)
    today = Resolution.objects.filter(reviewer=reviewer, created_at__gte=midnight, undone_at__isnull=True)
    return Progress(
        left=left,
        resolved_today=today.count(),
        oldest_since=oldest,
        held_by_others=held.count(),
    )


@dataclass(frozen=True, slots=True)
class Skipped:
    """A conflict the reviewer skipped and that is still open."""

    bag: Bag
    note: str
    skipped_at: datetime


def skipped_by(*, reviewer: str, owner_prefix: str = "", limit: int = 50) -> list[Skipped]:
    """The reviewer's skips of conflicts still open, in the order the desk hands them back."""
    skips = ReviewSkip.objects.filter(
        reviewer=reviewer, bag_id__in=ConflictEpisode.objects.filter(ended_at__isnull=True).values("bag_id")
    )
    if owner_prefix:
        skips = skips.filter(user_id__startswith=owner_prefix)
    rows = list(skips.order_by("skipped_at", "id")[:limit])
    bags = ScopeBag.objects.in_bulk([row.bag_id for row in rows])
    return [Skipped(Bag.of(bags[row.bag_id]), row.note, row.skipped_at) for row in rows if row.bag_id in bags]


@dataclass(frozen=True, slots=True)
class ResolutionRecord:
    """One resolution as the resolved list and the bag page show it."""

    deposit_id: str
    user_id: str
    bag_id: str
    bag: Bag
    reviewer: str
    side: str
    kept: int
    superseded: int
    # What the resolution deposit says holds (what recall returns), and why: its edges' reason.
    holds: str
    reason: str
    created_at: datetime
    undone_by: str | None
    undone_at: datetime | None
    # Its deposit retracted without Undo (through the API or the deposit page): undone all the same.
    retracted_at: datetime | None
    retracted_reason: str | None

    @property
    def undone(self) -> bool:
        return self.retracted_at is not None


def _resolutions() -> QuerySet[Resolution]:
    """Resolutions with their deposit and their reason, which the deposit's edges carry (all one)."""
    edges = Contradiction.objects.filter(new_deposit_id=OuterRef("deposit_id")).order_by("created_at", "id")
    return Resolution.objects.select_related("deposit").annotate(reason=Subquery(edges.values("reason")[:1]))


def _records(rows: list[Resolution]) -> list[ResolutionRecord]:
    bags = ScopeBag.objects.in_bulk({row.bag_id for row in rows})
    return [
        ResolutionRecord(
            deposit_id=str(row.deposit_id),
            user_id=row.user_id,
            bag_id=row.bag_id,
            bag=Bag.of(bags[row.bag_id]),
            reviewer=row.reviewer,
            side=row.side,
            kept=row.kept,
            superseded=row.superseded,
            holds=row.deposit.content,
            reason=row.reason or "",
            created_at=row.created_at,
            undone_by=row.undone_by,
            undone_at=row.undone_at,
            retracted_at=row.deposit.retracted_at,
            retracted_reason=row.deposit.retracted_reason,
        )
        for row in rows
    ]


def resolution_page(
    *, reviewer: str | None = None, owner_prefix: str = "", limit: int = 20, offset: int = 0
) -> Page[ResolutionRecord]:
    """Resolutions, newest first; only `reviewer`'s when named, only owners starting with the prefix."""
    rows = _resolutions()
    if reviewer is not None:
        rows = rows.filter(reviewer=reviewer)
    if owner_prefix:
        rows = rows.filter(user_id__startswith=owner_prefix)
    return page_of(rows.order_by("-created_at", "-deposit_id"), limit=limit, offset=offset, convert=_records)


def bag_resolutions(*, user_id: str, bag_id: str, limit: int = 20) -> list[ResolutionRecord]:
    """A bag's resolutions, newest first."""
    rows = _resolutions().filter(user_id=user_id, bag_id=bag_id)
    return _records(list(rows.order_by("-created_at", "-deposit_id")[:limit]))


def resolution(*, user_id: str, deposit_id: str) -> ResolutionRecord:
    row = _resolutions().filter(user_id=user_id, deposit_id=deposit_id).first()
    if row is None:
        raise not_found(f"no resolution {deposit_id!r} for user {user_id!r}")
    return _records([row])[0]

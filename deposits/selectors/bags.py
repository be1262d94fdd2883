"""Reads of scope bags: statistics from the live counts, pages, and one bag's deposits."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import F, QuerySet, Window
from django.db.models.functions import RowNumber

from atlaso_site.lib.errors import not_found
from atlaso_site.lib.paging import Page, page_of
from deposits.domain import bags as rules
from deposits.domain.bags import BAG_ID_PATTERN, BagStats
from deposits.domain.types import DIRECTIONAL, FACETS, Scope
from deposits.domain.types import Deposit as DepositRecord
from deposits.models import ConflictEpisode, Deposit, ScopeBag
from deposits.selectors.deposits import deposit_records
from deposits.selectors.owners import open_conflict_count

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
    return rules.is_resolved(kept_kinds, bag.kept_superseded, stats_of(bag).directional_kinds)


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
    def has_directional(self) -> bool:
        """Whether any live deposit takes a side, which agreement and thin evidence are about.

        So a bag of open notes shows neither a 0% agreement nor a thin badge.
        """
        return self.stats.directional_count > 0

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
    """An owner's bags holding live deposits, most recently changed first.

    Text facets are compared as bags hold them (NFC).
    """
    bags = ScopeBag.objects.filter(user_id=user_id).holding_live()
    for facet, value in (facets or {}).items():
        if value is not None:
            bags = bags.filter(**{facet: rules.compared(value)})
    if conflict is not None:
        bags = bags.in_conflict() if conflict else bags.not_in_conflict()
    rows = bags.order_by("-updated_at", "id")
    return page_of(rows, limit=limit, offset=offset, convert=lambda page: [Bag.of(row) for row in page])


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


QUEUE_PREVIEW = 3


@dataclass(frozen=True, slots=True)
class QueueItem:
    """A bag waiting in the conflict queue: since when, and its live directional deposits."""

    bag: Bag
    # Since when it has waited (an undone resolution's conflict: since before it was resolved).
    conflict_since: datetime
    # The newest few live deposits of each side, newest first: what the reviewer weighs.
    deposits: tuple[DepositRecord, ...]
    # How many live directional deposits the bag holds beyond the preview.
    more: int

    @property
    def user_id(self) -> str:
        return self.bag.user_id

    def side(self, polarity: str) -> list[DepositRecord]:
        return [d for d in self.deposits if d.polarity == polarity]


def newest_live_claims(*, owners: Iterable[str], bag_ids: Iterable[str], per_side: int) -> QuerySet[Deposit]:
    """Each bag's newest live directional deposits, at most `per_side` of each polarity.

    The owners are named too: every deposit index leads with user_id, so bag ids alone would
    scan the table. Recall's conflict peers and the queue's previews both read this.
    """
    return (
        Deposit.objects.filter(user_id__in=set(owners), bag_id__in=list(bag_ids))
        .live()
        .directional()
        .annotate(
            place=Window(
                RowNumber(),
                partition_by=[F("bag_id"), F("polarity")],
                order_by=[F("created_at").desc(), F("id").desc()],
            )
        )
        .filter(place__lte=per_side)
    )


def _queue_items(episodes: list[ConflictEpisode]) -> list[QueueItem]:
    """The queue's view of each episode's bag: one query for every preview, whatever the count."""
    ids = [episode.bag_id for episode in episodes]
    owners = {episode.user_id for episode in episodes}
    rows = list(
        newest_live_claims(owners=owners, bag_ids=ids, per_side=QUEUE_PREVIEW).order_by("-created_at", "-id")
    )
    records = dict(zip([row.pk for row in rows], deposit_records(rows), strict=True))
    by_bag: dict[str, list[DepositRecord]] = {bag_id: [] for bag_id in ids}
    for row in rows:
        by_bag[row.bag_id].append(records[row.pk])
    # The bag rows by primary key: a join would let the planner hash the whole bag table.
    rows_of = ScopeBag.objects.in_bulk(ids)
    items = []
    for episode in episodes:
        bag = Bag.of(rows_of[episode.bag_id])
        shown = tuple(by_bag[episode.bag_id])
        items.append(
            QueueItem(
                bag=bag,
                conflict_since=episode.waiting_from,
                deposits=shown,
                more=bag.stats.directional_count - len(shown),
            )
        )
    return items


def conflict_queue(*, owner_prefix: str = "", limit: int = 20, offset: int = 0) -> Page[QueueItem]:
    """Every open conflict across owners, oldest conflict first, in five queries whatever the page.

    (Four when the first page holds the whole queue: it is not counted again.)
    """
    episodes = ConflictEpisode.objects.filter(ended_at__isnull=True)
    if owner_prefix:
        episodes = episodes.filter(user_id__startswith=owner_prefix)
    # Unfiltered, the number open is the deployment's count the writes keep, not a count of them.
    counted = None if owner_prefix else open_conflict_count
    return page_of(
        episodes.order_by("started_at", "id"),
        limit=limit,
        offset=offset,
        convert=_queue_items,
        counted=counted,
    )


def queue_item(*, user_id: str, bag_id: str) -> QueueItem:
    """One bag as the queue shows it, from its latest conflict, open or ended.

    For showing a resolution that failed in place: the bag may have left the queue meanwhile.
    """
    episode = (
        ConflictEpisode.objects.filter(user_id=user_id, bag_id=bag_id).order_by("-started_at", "-id").first()
    )
    if episode is None:
        raise not_found(f"bag {bag_id!r} of user {user_id!r} was never in conflict")
    return _queue_items([episode])[0]

"""Recall: what an agent reads, with flags no page size can hide."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import F, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from beliefs.domain.values import normalize_value
from beliefs.errors import ApiError
from beliefs.selectors import verdicts_for
from deposits.bags import bag_stats
from deposits.domain.bags import MAX_CONFLICT_PEERS, BagStats, explain_hit, peer_polarities
from deposits.domain.recall import MAX_LIMIT, EmptyQueryError, explain_results, query_words, slice_hits
from deposits.domain.types import DIRECTIONAL
from deposits.domain.types import Deposit as DepositRecord
from deposits.domain.validation import DepositValidationError, validate_scope, validate_user_id
from deposits.models import Contradiction, Deposit, RecallLog
from deposits.search import SearchRequest, search_backend
from deposits.selectors import deposit_records


@dataclass(frozen=True, slots=True)
class SearchResult:
    """A hit: the deposit, its score, and the flags of the bag it lives in."""

    deposit: DepositRecord
    score: float
    bag_id: str
    stats: BagStats
    conflict_peers: tuple[str, ...] = ()
    superseded: bool = False
    belief: dict[str, Any] | None = None

    @property
    def id(self) -> str:
        return self.deposit.id

    @property
    def content(self) -> str:
        return self.deposit.content

    @property
    def polarity(self) -> str:
        return self.deposit.polarity

    @property
    def is_confident(self) -> bool:
        return self.stats.is_confident

    @property
    def has_disagreement(self) -> bool:
        return self.stats.has_disagreement

    def explain(self) -> str:
        return explain_hit(self.stats)

    def to_dict(self) -> dict[str, Any]:
        d = self.deposit
        return {
            "kind": "search_result",
            "id": d.id,
            "content": d.content,
            "polarity": d.polarity,
            "evidence_grade": d.evidence_grade,
            "scope": d.scope.to_dict(),
            "tags": list(d.tags),
            "created_at": d.to_dict()["created_at"],
            "score": self.score,
            "is_confident": self.stats.is_confident,
            "has_disagreement": self.stats.has_disagreement,
            "agreement_score": self.stats.agreement_score,
            "is_thin_evidence": self.stats.is_thin_evidence,
            "conflict_peers": list(self.conflict_peers),
            "bag_id": self.bag_id,
            "superseded": self.superseded,
            "explain": self.explain(),
            "belief": self.belief,
            "deposit": d.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class SearchResults:
    items: tuple[SearchResult, ...]
    has_disagreement: bool
    is_confident: bool
    bag_count: int
    conflict_bag_count: int

    def __iter__(self):
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def explain(self) -> str:
        return explain_results(
            hit_count=len(self.items),
            bag_count=self.bag_count,
            conflict_bag_count=self.conflict_bag_count,
            is_confident=self.is_confident,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "search_results",
            "items": [item.to_dict() for item in self.items],
            "has_disagreement": self.has_disagreement,
            "is_confident": self.is_confident,
            "bag_count": self.bag_count,
            "conflict_bag_count": self.conflict_bag_count,
            "explain": self.explain(),
        }


def _peers(
    user_id: str, hits: list[tuple[str, str, str]], stats: Mapping[str, BagStats]
) -> dict[str, tuple[str, ...]]:
    """Conflict peers per hit id: live opposing deposits of its bag, newest first, at most 50."""
    conflict_bags = {bag for _, bag, _ in hits if stats[bag].has_disagreement}
    if not conflict_bags:
        return {}
    superseded = Contradiction.objects.filter(user_id=user_id).values("old_deposit_id")
    rows = (
        Deposit.objects.filter(
            user_id=user_id, bag_id__in=conflict_bags, retracted_at__isnull=True, polarity__in=DIRECTIONAL
        )
        .exclude(id__in=superseded)
        .annotate(
            place=Window(
                RowNumber(),
                partition_by=[F("bag_id"), F("polarity")],
                order_by=[F("created_at").desc(), F("id").desc()],
            )
        )
        .filter(place__lte=MAX_CONFLICT_PEERS)
        .values_list("id", "bag_id", "polarity", "created_at")
    )
    by_bag: dict[str, list[tuple[datetime, str, str]]] = defaultdict(list)
    for deposit_id, bag, polarity, created_at in rows:
        by_bag[bag].append((created_at, str(deposit_id), polarity))
    peers: dict[str, tuple[str, ...]] = {}
    for hit_id, bag, polarity in hits:
        if bag not in conflict_bags:
            continue
        wanted = set(peer_polarities(stats[bag], polarity))
        newest_first = sorted(
            (row for row in by_bag[bag] if row[2] in wanted and row[1] != hit_id), reverse=True
        )
        peers[hit_id] = tuple(deposit_id for _, deposit_id, _ in newest_first[:MAX_CONFLICT_PEERS])
    return peers


def _belief_blocks(
    user_id: str, records: Iterable[DepositRecord], now: datetime
) -> dict[str, dict[str, Any]]:
    """For hits that carry a belief: its verdict, and the probability of the hit's own value."""
    carrying = [r for r in records if r.belief is not None]
    if not carrying:
        return {}
    verdicts = verdicts_for(user_id=user_id, keys={r.belief.key for r in carrying}, now=now)  # type: ignore[union-attr]
    blocks = {}
    for record in carrying:
        verdict = verdicts.get(record.belief.key)  # type: ignore[union-attr]
        if verdict is None:
            continue
        value = record.belief.value  # type: ignore[union-attr]
        blocks[record.id] = {
            **verdict.to_dict(),
            "value": value,
            "value_probability": verdict.probability_of(value),
            "asserted": verdict.fact is not None and normalize_value(verdict.fact) == normalize_value(value),
        }
    return blocks


def _demoted(hit: SearchResult) -> bool:
    return hit.belief is not None and hit.belief["fact"] is not None and not hit.belief["asserted"]


def recall(
    *,
    user_id: str,
    query: str,
    facets: Mapping[str, Any] | None = None,
    limit: int = 10,
    include_superseded: bool = False,
    now: datetime | None = None,
) -> SearchResults:
    """Search one owner's live deposits; flags come from every matching bag, before the slice."""
    try:
        validate_user_id(user_id)
        words = query_words(query)
    except DepositValidationError as error:
        raise ApiError("validation_error", error.message, field=error.field) from error
    except EmptyQueryError as error:
        raise ApiError("validation_error", str(error), field="q") from error
    if not 1 <= limit <= MAX_LIMIT:
        raise ApiError("validation_error", f"limit must be 1..{MAX_LIMIT}", field="limit")
    given = {name: value for name, value in (facets or {}).items() if value is not None}
    try:
        validate_scope(given)
    except DepositValidationError as error:
        raise ApiError("validation_error", error.message, field=error.field) from error
    now = now or timezone.now()
    candidates, totals, superseded = search_backend().search(
        SearchRequest(
            user_id=user_id,
            words=words,
            now=now,
            per_class=limit,
            facets=given,
            include_superseded=include_superseded,
        )
    )
    chosen = slice_hits(candidates, limit)
    rows = {
        str(row.pk): row for row in Deposit.objects.filter(user_id=user_id, id__in=[c.id for c in chosen])
    }
    records = {record.id: record for record in deposit_records(list(rows.values()))}
    stats = bag_stats({c.bag_id for c in chosen})
    peers = _peers(user_id, [(c.id, c.bag_id, c.polarity) for c in chosen], stats)
    beliefs = _belief_blocks(user_id, records.values(), now)
    hits = [
        SearchResult(
            deposit=records[c.id],
            score=c.score,
            bag_id=c.bag_id,
            stats=stats[c.bag_id],
            conflict_peers=peers.get(c.id, ()),
            superseded=c.id in superseded,
            belief=beliefs.get(c.id),
        )
        for c in chosen
        if c.id in records
    ]
    in_conflict = {c.id: c.in_conflict for c in chosen}
    # A value its belief no longer asserts ranks below the rest of its class.
    hits.sort(key=lambda h: (not in_conflict[h.id], _demoted(h), -h.score, h.id))
    items = tuple(hits)
    results = SearchResults(
        items=items,
        has_disagreement=totals.conflict_bag_count > 0,
        is_confident=totals.confident_bag_count > 0 and totals.conflict_bag_count == 0,
        bag_count=totals.bag_count,
        conflict_bag_count=totals.conflict_bag_count,
    )
    RecallLog.objects.create(
        user_id=user_id,
        created_at=now,
        hit_count=len(items),
        returned_confident=any(i.is_confident for i in items),
    )
    return results


__all__ = ["SearchResult", "SearchResults", "recall"]

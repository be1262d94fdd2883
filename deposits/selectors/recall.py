"""Recall: what an agent reads, with flags no page size can hide."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from django.utils import timezone

from atlaso_site.lib.errors import invalid
from beliefs.domain.rule import Verdict
from beliefs.domain.values import normalize_value
from beliefs.selectors import verdict_of, verdicts_for
from deposits.domain.bags import BagStats, compared, explain_hit
from deposits.domain.recall import MAX_LIMIT, EmptyQueryError, explain_results, query_words, slice_hits
from deposits.domain.types import Deposit as DepositRecord
from deposits.domain.types import Scope
from deposits.domain.validation import validate_scope, validate_user_id
from deposits.search import SearchRequest, search_backend
from deposits.search.base import Aggregates
from deposits.selectors.hits import HitDetail, hit_details


@dataclass(frozen=True, slots=True)
class HitBelief(Verdict):
    """The verdict of a hit's belief, and where the hit's own value stands in it."""

    value: str
    value_probability: float
    asserted: bool


@dataclass(frozen=True, slots=True)
class SearchResult:
    """A hit: the deposit, its score, and the flags of the bag it lives in."""

    deposit: DepositRecord
    score: float
    bag_id: str
    stats: BagStats
    conflict_peers: tuple[str, ...] = ()
    superseded: bool = False
    belief: HitBelief | None = None

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
    def evidence_grade(self) -> str:
        return self.deposit.evidence_grade

    @property
    def scope(self) -> Scope:
        return self.deposit.scope

    @property
    def tags(self) -> tuple[str, ...]:
        return self.deposit.tags

    @property
    def created_at(self) -> datetime:
        return self.deposit.created_at

    @property
    def is_confident(self) -> bool:
        return self.stats.is_confident

    @property
    def has_disagreement(self) -> bool:
        return self.stats.has_disagreement

    @property
    def agreement_score(self) -> float:
        return self.stats.agreement_score

    @property
    def is_thin_evidence(self) -> bool:
        return self.stats.is_thin_evidence

    def explain(self) -> str:
        return explain_hit(self.stats)

    @property
    def is_demoted(self) -> bool:
        """Its belief asserts another value: it ranks below the rest of its class."""
        return self.belief is not None and self.belief.fact is not None and not self.belief.asserted


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


def _hit_beliefs(user_id: str, details: Iterable[HitDetail], now: datetime) -> dict[str, HitBelief]:
    """For hits that carry a belief: its verdict, and the probability of the hit's own value.

    A detail read on PostgreSQL brought its belief's state along; the others are read here.
    """
    carrying = [detail for detail in details if detail.record.belief is not None]
    if not carrying:
        return {}
    unread = {detail.record.belief.key for detail in carrying if not detail.belief_read}  # type: ignore[union-attr]
    verdicts = verdicts_for(user_id=user_id, keys=unread, now=now) if unread else {}
    beliefs = {}
    for detail in carrying:
        record = detail.record
        key = record.belief.key  # type: ignore[union-attr]
        if detail.belief_read:
            verdict = (
                None
                if detail.belief_state is None
                else verdict_of(key=key, state=detail.belief_state, now=now)
            )
        else:
            verdict = verdicts.get(key)
        if verdict is None:
            continue
        value = record.belief.value  # type: ignore[union-attr]
        beliefs[record.id] = HitBelief(
            **{f.name: getattr(verdict, f.name) for f in fields(Verdict)},
            value=value,
            value_probability=verdict.probability_of(value),
            asserted=verdict.fact is not None and normalize_value(verdict.fact) == normalize_value(value),
        )
    return beliefs


def _validated(
    user_id: str, query: str, facets: Mapping[str, Any] | None, limit: int
) -> tuple[list[str], dict]:
    """The query's words and the facets given; raises a validation_error naming the field."""
    validate_user_id(user_id)
    try:
        words = query_words(query)
    except EmptyQueryError as error:
        raise invalid("q", str(error)) from error
    if not 1 <= limit <= MAX_LIMIT:
        raise invalid("limit", f"limit must be 1..{MAX_LIMIT}")
    given = {name: value for name, value in (facets or {}).items() if value is not None}
    validate_scope(given)
    # Compared as bags compare them (NFC): "café" finds the deposits sent with either spelling.
    return words, {name: compared(value) for name, value in given.items()}


def _results(hits: list[SearchResult], in_conflict: Mapping[str, bool], totals: Aggregates) -> SearchResults:
    """Conflict hits first; a value its belief no longer asserts ranks below the rest of its class."""
    hits.sort(key=lambda h: (not in_conflict[h.id], h.is_demoted, -h.score, h.id))
    return SearchResults(
        items=tuple(hits),
        has_disagreement=totals.conflict_bag_count > 0,
        is_confident=totals.confident_bag_count > 0 and totals.conflict_bag_count == 0,
        bag_count=totals.bag_count,
        conflict_bag_count=totals.conflict_bag_count,
    )


def recall(
    *,
    user_id: str,
    query: str,
    facets: Mapping[str, Any] | None = None,
    limit: int = 10,
    include_superseded: bool = False,
    now: datetime | None = None,
) -> SearchResults:
    """Search one owner's live deposits; flags come from every matching bag, before the slice.

    A pure read: recording the recall for the Coverage pillar is `services.recall_record`.
    """
    words, given = _validated(user_id, query, facets, limit)
    now = now or timezone.now()
    candidates, totals, superseded = search_backend().search(
        SearchRequest(
            user_id=user_id, words=words, now=now, per_class=limit, facets=given,
            include_superseded=include_superseded,
        )
    )  # fmt: skip
    chosen = slice_hits(candidates, limit)
    details = hit_details(user_id, [c.id for c in chosen])
    beliefs = _hit_beliefs(user_id, details.values(), now)
    hits = [
        SearchResult(
            deposit=details[c.id].record,
            score=c.score,
            bag_id=c.bag_id,
            stats=details[c.id].stats,
            conflict_peers=details[c.id].conflict_peers,
            superseded=c.id in superseded,
            belief=beliefs.get(c.id),
        )
        for c in chosen
        if c.id in details
    ]
    return _results(hits, {c.id: c.in_conflict for c in chosen}, totals)


__all__ = ["HitBelief", "SearchResult", "SearchResults", "recall"]

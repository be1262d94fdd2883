"""Recall: what an agent reads, with flags no page size can hide."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

import numpy as np
from django.utils import timezone

from atlaso_site.lib.errors import EMBEDDER_UNAVAILABLE, AtlasoError, invalid
from beliefs.domain.rule import Verdict
from beliefs.domain.values import normalize_value
from beliefs.selectors import verdict_of, verdicts_for
from deposits.domain.bags import BagStats, compared, explain_hit
from deposits.domain.meaning import MODES, explain_modes, fused
from deposits.domain.recall import (
    MAX_LIMIT,
    Candidate,
    EmptyQueryError,
    explain_results,
    query_words,
    slice_hits,
)
from deposits.domain.types import Deposit as DepositRecord
from deposits.domain.types import Scope
from deposits.domain.validation import validate_scope, validate_user_id
from deposits.embedders import EmbedderError, QueryVector, configured
from deposits.search import SearchRequest, search_backend
from deposits.search.base import Aggregates
from deposits.search.meaning import MeaningMatch, ModelInfo, held_codes, meaning_search, owner_codes
from deposits.selectors.embedding import model_info
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
    # Which ranking found it: words, meaning, or both (recall-by-meaning.md).
    matched_by: str = "words"

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
    # The rankings that ran, and why meaning did not when it was asked for (it fell back to words).
    modes: tuple[str, ...] = ("words",)
    unavailable: str | None = None

    def __iter__(self):
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def explain(self) -> str:
        told = explain_results(
            hit_count=len(self.items),
            bag_count=self.bag_count,
            conflict_bag_count=self.conflict_bag_count,
            is_confident=self.is_confident,
        )
        modes = explain_modes(self.modes, self.unavailable)
        return f"{told} · {modes}" if modes else told


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


def _results(
    hits: list[SearchResult],
    in_conflict: Mapping[str, bool],
    totals: Aggregates,
    *,
    modes: tuple[str, ...] = ("words",),
    unavailable: str | None = None,
) -> SearchResults:
    """Conflict hits first; a value its belief no longer asserts ranks below the rest of its class."""
    hits.sort(key=lambda h: (not in_conflict[h.id], h.is_demoted, -h.score, h.id))
    return SearchResults(
        items=tuple(hits),
        has_disagreement=totals.conflict_bag_count > 0,
        is_confident=totals.confident_bag_count > 0 and totals.conflict_bag_count == 0,
        bag_count=totals.bag_count,
        conflict_bag_count=totals.conflict_bag_count,
        modes=modes,
        unavailable=unavailable,
    )


def recall(
    *,
    user_id: str,
    query: str,
    facets: Mapping[str, Any] | None = None,
    limit: int = 10,
    include_superseded: bool = False,
    now: datetime | None = None,
    mode: str | None = None,
) -> SearchResults:
    """Search one owner's live deposits; flags come from every matching bag, before the slice.

    `mode` is `words`, `meaning` or `hybrid` (recall-by-meaning.md); None: hybrid when an
    embedder is configured and the owner has vectors of its model, else words. A pure read:
    recording the recall for the Coverage pillar is `services.recall_record`.
    """
    words, given = _validated(user_id, query, facets, limit)
    if mode is not None and mode not in MODES:
        raise invalid("mode", f"mode must be one of {', '.join(MODES)}")
    now = now or timezone.now()
    request = SearchRequest(
        user_id=user_id, words=words, now=now, per_class=limit, facets=given,
        include_superseded=include_superseded,
    )  # fmt: skip
    if mode == "words":
        return _by_words(request, limit)
    plan = _meaning_plan(user_id, mode)
    if isinstance(plan, str):  # no meaning to search by (why, when meaning was asked for)
        return _by_words(request, limit, unavailable=plan if mode is not None else None)
    embedder, model = plan
    # The query is embedded on another thread while the owner's codes are brought up to date and
    # the words are searched here; first, when this process holds none of the owner's codes yet,
    # whether it has any (an owner without vectors is recalled by words, and embeds nothing).
    vector = QueryVector(embedder, query) if held_codes(user_id, model) else None
    codes = owner_codes(user_id, model)
    if codes.size == 0:
        return _by_words(request, limit, unavailable=_no_vectors(user_id, embedder.name) if mode else None)
    vector = vector or QueryVector(embedder, query)
    words_found, known = (
        _words_meanwhile(request, limit, vector) if (mode or "hybrid") == "hybrid" else (None, {})
    )
    try:
        query_vector = _checked(vector.result(), model)
        words_bags = search_backend().bag_matches_sql(request) if words_found is not None else None
        matches = meaning_search(request, query_vector, model, codes, words_bags)
    except EmbedderError as error:
        return _by_words(request, limit, unavailable=str(error), found=words_found, known=known)
    return _by_meaning(request, limit, matches, words_found, known)


def _words_meanwhile(
    request: SearchRequest, limit: int, vector: QueryVector
) -> tuple[tuple[list[Candidate], Aggregates, set[str]], dict[str, HitDetail]]:
    """Hybrid's search by words, run while the query is being embedded, and the hits it would show.

    Those hits are read while the embedding still runs: most stay in the fused slice, and only
    the others are read once it is known.
    """
    found = search_backend().search(request)
    if vector.done():
        return found, {}
    return found, hit_details(request.user_id, [c.id for c in slice_hits(found[0], limit)])


def _checked(query_vector: np.ndarray, model: ModelInfo) -> np.ndarray:
    """The query's vector, if it has the model's dimensions (else the embedder failed)."""
    if query_vector.shape != (model.dims,):
        raise EmbedderError(
            f"the embedder answered {query_vector.shape[-1]} dimensions where {model.name}'s vectors have {model.dims}"
        )
    return query_vector


def _meaning_plan(user_id: str, mode: str | None) -> tuple[Any, ModelInfo] | str:
    """The embedder and model to search by meaning with, or why there is none to search.

    With no usable embedder, asking for meaning (or hybrid) is refused: 422 embedder_unavailable.
    """
    found = configured()
    if found.embedder is None:
        if mode is None:
            return "no embedder is configured"
        raise AtlasoError(
            EMBEDDER_UNAVAILABLE,
            f"recall by {mode} needs an embedder, and this server has none: "
            f"{found.problem or 'ATLASO_EMBEDDER is none'}; ask with mode=words",
            field="mode",
        )
    model = model_info(found.embedder.name)
    return (found.embedder, model) if model is not None else _no_vectors(user_id, found.embedder.name)


def _no_vectors(user_id: str, model: str) -> str:
    return f"no deposit of {user_id} has a vector of {model} yet"


def _by_words(
    request: SearchRequest,
    limit: int,
    *,
    unavailable: str | None = None,
    found: tuple[list[Candidate], Aggregates, set[str]] | None = None,
    known: Mapping[str, HitDetail] | None = None,
) -> SearchResults:
    """Recall by words, exactly as it has always ranked (`unavailable`: meaning was asked for)."""
    candidates, totals, superseded = found if found is not None else search_backend().search(request)
    chosen = slice_hits(candidates, limit)
    hits = _hits(request, chosen, superseded, dict.fromkeys((c.id for c in chosen), "words"), known)
    return _results(hits, {c.id: c.in_conflict for c in chosen}, totals, unavailable=unavailable)


def _by_meaning(
    request: SearchRequest,
    limit: int,
    matches: list[MeaningMatch],
    words_found: tuple[list[Candidate], Aggregates, set[str]] | None,
    known: Mapping[str, HitDetail] | None = None,
) -> SearchResults:
    """Recall by meaning, or hybrid (`words_found`) with the two rankings fused by reciprocal rank.

    The ordering rule and the polarity reservation then apply as by words. The flags count every bag
    a words match is in (as by words) and every bag of a deposit found by meaning.
    """
    meaning = [match.candidate for match in matches]
    superseded = {match.candidate.id for match in matches if match.superseded}
    meaning_bags = {match.candidate.bag_id: match for match in matches}
    if words_found is None:
        candidates, matched_by = meaning, dict.fromkeys((c.id for c in meaning), "meaning")
        totals = _bag_totals(meaning_bags.values())
        modes: tuple[str, ...] = ("meaning",)
    else:
        words, words_totals, words_superseded = words_found
        candidates, matched_by = fused(words, meaning)
        superseded |= words_superseded
        also = meaning_bags
        if words_totals.bag_count and meaning_bags:
            if all(match.bag_matches_words is not None for match in matches):
                counted = {match.candidate.bag_id for match in matches if match.bag_matches_words}
            else:
                counted = search_backend().bags_matching(request, list(meaning_bags))
            also = {bag: match for bag, match in meaning_bags.items() if bag not in counted}
        extra = _bag_totals(also.values())
        totals = Aggregates(
            bag_count=words_totals.bag_count + extra.bag_count,
            conflict_bag_count=words_totals.conflict_bag_count + extra.conflict_bag_count,
            confident_bag_count=words_totals.confident_bag_count + extra.confident_bag_count,
        )
        modes = ("words", "meaning")
    chosen = slice_hits(candidates, limit)
    hits = _hits(request, chosen, superseded, matched_by, known)
    return _results(hits, {c.id: c.in_conflict for c in chosen}, totals, modes=modes)


def _bag_totals(matches: Iterable[MeaningMatch]) -> Aggregates:
    """Bags, conflict bags and confident bags among the bags of these matches (one match per bag)."""
    matches = list(matches)
    return Aggregates(
        bag_count=len(matches),
        conflict_bag_count=sum(m.candidate.in_conflict for m in matches),
        confident_bag_count=sum(m.confident for m in matches),
    )


def _hits(
    request: SearchRequest,
    chosen: list[Candidate],
    superseded: set[str],
    matched_by: Mapping[str, str],
    known: Mapping[str, HitDetail] | None = None,
) -> list[SearchResult]:
    """The chosen candidates as hits, their details read (those not already `known`)."""
    known = known or {}
    details = {c.id: known[c.id] for c in chosen if c.id in known}
    details |= hit_details(request.user_id, [c.id for c in chosen if c.id not in known])
    beliefs = _hit_beliefs(request.user_id, details.values(), request.now)
    return [
        SearchResult(
            deposit=details[c.id].record,
            score=c.score,
            bag_id=c.bag_id,
            stats=details[c.id].stats,
            conflict_peers=details[c.id].conflict_peers,
            superseded=c.id in superseded,
            belief=beliefs.get(c.id),
            matched_by=matched_by.get(c.id, "words"),
        )
        for c in chosen
        if c.id in details
    ]


__all__ = ["HitBelief", "SearchResult", "SearchResults", "recall"]

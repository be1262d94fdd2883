"""The one recall query, with the few fragments each database spells differently.

One statement finds every match, scores it (text rank × recency decay), keeps the best
`per_class` of each (conflict?, polarity) class for the slice, and counts the matching
bags, so the aggregate flags cover every match however small `limit` is.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection

from deposits.domain.recall import HALF_LIFE_DAYS, Candidate
from deposits.sql.rules import confident_sql, in_bags_with_sql, in_conflict_sql, superseded_sql


@dataclass(frozen=True, slots=True)
class SearchRequest:
    user_id: str
    words: list[str]
    now: datetime
    # The slice's limit. A backend returns, of each polarity, at least the hits `slice_hits` can
    # pick for it: this statement keeps the first `per_class` of each class, PostgreSQL's walk
    # only the places the slice can give (deposits.search.postgres).
    per_class: int
    facets: Mapping[str, str | int] = field(default_factory=dict)
    include_superseded: bool = False


@dataclass(frozen=True, slots=True)
class Aggregates:
    bag_count: int = 0
    conflict_bag_count: int = 0
    confident_bag_count: int = 0


def half_life_case() -> str:
    arms = " ".join(f"WHEN '{polarity}' THEN {days}" for polarity, days in HALF_LIFE_DAYS.items())
    return f"(CASE d.polarity {arms} END)"


class SearchBackend:
    """Subclasses give the match clause, the text rank, and the age in days."""

    #: FROM clause that yields deposits as `d`, joined to the text index.
    source_sql: str
    #: WHERE fragment that applies the text query (its parameters: `match_params`).
    match_sql: str
    #: The text rank of a match, higher is better.
    rank_sql: str
    #: Age of `d.created_at` in days at %s (one %s: now).
    age_days_sql: str

    def text_query(self, words: list[str]) -> str:
        raise NotImplementedError

    def forget_erased(self) -> None:
        """Purge whatever the index still keeps of erased deposits' words (after an erasure).

        PostgreSQL keeps none that any query can read: the erased row's tsvector and its index
        entries are dead with it, and vacuum reclaims them.
        """

    def rank_params(self, query: str) -> list[object]:
        """Parameters `rank_sql` takes, in order."""
        return []

    def match_params(self, query: str, user_id: str) -> list[object]:
        """Parameters `match_sql` takes, in order."""
        return [query]

    def bag_matches_sql(self, request: SearchRequest) -> tuple[str, list[object]] | None:
        """SQL true of a bag row `bag` when `bags_matching` would name it, with its parameters.

        It serves a statement that reads bags anyway (hybrid recall's by meaning). None where only
        `bags_matching` can tell.
        """
        return None

    def bags_matching(self, request: SearchRequest, bag_ids: list[str]) -> set[str]:
        """Which of these bags of the owner hold a deposit the words match.

        A deposit counts as `search` counts it: a live one, or a superseded one too when asked.
        Hybrid recall counts each bag once.
        """
        if not bag_ids:
            return set()
        query = self.text_query(request.words)
        superseded = superseded_sql("d", owner_param=True)
        live_filter = "" if request.include_superseded else f" AND NOT {superseded}"
        marks = ", ".join(["%s"] * len(bag_ids))
        sql = f"""
SELECT DISTINCT d.bag_id FROM {self.source_sql}
WHERE {self.match_sql} AND d.user_id = %s AND d.retracted_at IS NULL{live_filter} AND d.bag_id IN ({marks})
"""
        params: list[object] = [
            *self.match_params(query, request.user_id),
            request.user_id,
            *([] if request.include_superseded else [request.user_id]),
            *bag_ids,
        ]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return {row[0] for row in cursor.fetchall()}

    def search(self, request: SearchRequest) -> tuple[list[Candidate], Aggregates, set[str]]:
        """(top candidates per class, aggregates over every match, ids of superseded hits)."""
        query = self.text_query(request.words)
        adapt = connection.ops.adapt_datetimefield_value
        facet_sql = f" AND {in_bags_with_sql(request.facets)}" if request.facets else ""
        superseded = superseded_sql("d", owner_param=True)
        live_filter = "" if request.include_superseded else f" AND NOT {superseded}"
        decay_sql = f"exp(-({self.age_days_sql}) * ln(2) / {half_life_case()})"
        sql = f"""
WITH m AS MATERIALIZED (
    SELECT d.id, d.bag_id, d.polarity, ({self.rank_sql}) * {decay_sql} AS score,
           {superseded} AS superseded
    FROM {self.source_sql}
    WHERE {self.match_sql} AND d.user_id = %s AND d.retracted_at IS NULL{live_filter}{facet_sql}
),
b AS MATERIALIZED (
    SELECT bag.id, {in_conflict_sql("bag")} AS in_conflict, {confident_sql("bag")} AS confident
    FROM deposits_scopebag bag
    WHERE bag.user_id = %s AND bag.id IN (SELECT DISTINCT m.bag_id FROM m)
),
c AS (
    -- Each match's class; a lookup in the conflict bags, which SQLite indexes and PostgreSQL
    -- hashes (a join of two CTEs has neither index in SQLite: it compared every pair).
    SELECT m.*, m.bag_id IN (SELECT b.id FROM b WHERE b.in_conflict) AS in_conflict FROM m
),
r AS (
    SELECT c.id, c.bag_id, c.polarity, c.score, c.in_conflict, c.superseded,
           row_number() OVER (PARTITION BY c.in_conflict, c.polarity ORDER BY c.score DESC, c.id) AS place
    FROM c
)
SELECT 0, r.id, r.bag_id, r.polarity, r.score, r.in_conflict, r.superseded, 0, 0 FROM r WHERE r.place <= %s
UNION ALL
SELECT 1, NULL, NULL, NULL, NULL, NULL, NULL, 0, count(*)
FROM b
UNION ALL
SELECT 2, NULL, NULL, NULL, NULL, NULL, NULL, count(*) FILTER (WHERE b.in_conflict),
       count(*) FILTER (WHERE b.confident)
FROM b
"""
        params: list[object] = [
            *self.rank_params(query),
            adapt(request.now),
            request.user_id,
            *self.match_params(query, request.user_id),
            request.user_id,
            *([] if request.include_superseded else [request.user_id]),
            *([request.user_id, *request.facets.values()] if request.facets else []),
            request.user_id,
            request.per_class,
        ]
        candidates: list[Candidate] = []
        superseded: set[str] = set()
        totals = {1: (0, 0), 2: (0, 0)}
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            for part, raw_id, bag_id, polarity, score, in_conflict, is_superseded, a, b in cursor.fetchall():
                if part == 0:
                    deposit_id = str(uuid.UUID(str(raw_id)))
                    candidates.append(
                        Candidate(deposit_id, bag_id, polarity, float(score), bool(in_conflict))
                    )
                    if is_superseded:
                        superseded.add(deposit_id)
                else:
                    totals[part] = (int(a or 0), int(b or 0))
        aggregates = Aggregates(
            bag_count=totals[1][1],
            conflict_bag_count=totals[2][0],
            confident_bag_count=totals[2][1],
        )
        return candidates, aggregates, superseded

"""PostgreSQL: a generated `tsvector` over content + scope note, GIN-indexed as
(user_id, polarity, tsv); each bag also keeps the lexemes of its live deposits.

A query for a common word can match most of an owner's deposits, so recall never walks and
sorts every match: the aggregate flags come from the owner's bags (a bag matches when any
of its live deposits does, which is exactly what an OR-of-words query on the union of their
lexemes says), and the best hits come from one top-N per polarity over that polarity's index
entries, plus the few matches in conflict bags.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.db import connection

from deposits.domain.recall import Candidate, decay
from deposits.domain.types import POLARITIES
from deposits.search.base import Aggregates, SearchBackend, SearchRequest, half_life_case
from deposits.sqlrules import confident_sql, in_conflict_sql, live_sql

TS_CONFIG = "english"
# ts_rank of an unweighted tsvector against an OR of plain words never exceeds 0.1: each word
# adds at most 0.1·Σ1/j²/(π²/6) < 0.1 and the sum is divided by the number of words.
MAX_TEXT_RANK = 0.1
# Past this many matching bags a word is common: walk its matches newest first instead.
DENSE_BAGS = 3000
NEWEST_FIRST_CHUNK = 256
NEWEST_FIRST_MAX_CHUNK = 8192


class PostgresBackend(SearchBackend):
    source_sql = "deposits_deposit d"
    match_sql = f"d.search_vector @@ to_tsquery('{TS_CONFIG}', %s)"
    rank_sql = f"ts_rank(d.search_vector, to_tsquery('{TS_CONFIG}', %s))"
    # date_part gives a float; extract() gives numeric, whose arithmetic is several times slower.
    # A row stamped after `now` (clock skew between writers) counts as brand new, as decay() says.
    age_days_sql = "greatest(date_part('epoch', %s - d.created_at) / 86400.0, 0)"

    def rank_params(self, query: str) -> list[object]:
        return [query]

    def text_query(self, words: list[str]) -> str:
        # Words are letters and digits only (query_words), so they cannot carry tsquery syntax.
        return " | ".join(words)

    def search(self, request: SearchRequest) -> tuple[list[Candidate], Aggregates, set[str]]:
        if request.include_superseded:
            # Bags keep only their live lexemes; the superseded view walks the matches instead.
            return super().search(request)
        query = self.text_query(request.words)
        aggregates, conflict_bags = self._bag_aggregates(request, query)
        if aggregates.bag_count == 0:
            return [], aggregates, set()
        return self._candidates(request, query, conflict_bags, aggregates.bag_count), aggregates, set()

    def _bag_aggregates(self, request: SearchRequest, query: str) -> tuple[Aggregates, list[str]]:
        facets = "".join(f" AND bag.{name} = %s" for name in request.facets)
        sql = f"""
WITH q AS (SELECT to_tsquery('{TS_CONFIG}', %s) AS q),
matched AS (
    SELECT bag.* FROM q, deposits_scopebag bag
    WHERE bag.user_id = %s{facets} AND bag.live_terms @@ q.q
    UNION ALL
    -- A bag whose lexemes outgrew a tsvector is asked of its deposits instead.
    SELECT bag.* FROM q, deposits_scopebag bag
    WHERE bag.user_id = %s{facets} AND bag.terms_overflow AND EXISTS (
        SELECT 1 FROM deposits_deposit d
        WHERE d.user_id = bag.user_id AND d.bag_id = bag.id AND d.search_vector @@ q.q
          AND {live_sql("d")}
    )
)
SELECT count(*),
       count(*) FILTER (WHERE {in_conflict_sql("bag")}),
       count(*) FILTER (WHERE {confident_sql("bag")}),
       coalesce(array_agg(bag.id) FILTER (WHERE {in_conflict_sql("bag")}), '{{}}')
FROM matched bag
"""
        facet_values = list(request.facets.values())
        with connection.cursor() as cursor:
            cursor.execute(sql, [query, request.user_id, *facet_values, request.user_id, *facet_values])
            bags, conflicts, confident, conflict_ids = cursor.fetchone()
        return Aggregates(bag_count=bags, conflict_bag_count=conflicts, confident_bag_count=confident), list(
            conflict_ids
        )

    def _candidates(
        self, request: SearchRequest, query: str, conflict_bags: list[str], matching_bags: int
    ) -> list[Candidate]:
        """The best `per_class` hits of each (conflict?, polarity) class, by score."""
        found = self._conflict_candidates(request, query, conflict_bags)
        # The newest-first walk stops early only when a match's rank is near its bound, which
        # holds for one word; several words rank most matches far below it.
        if len(request.words) > 1 or matching_bags <= DENSE_BAGS:
            return found + self._top_by_polarity(request, query, conflict_bags)
        for polarity in POLARITIES:
            found += self._newest_first(request, query, conflict_bags, polarity)
        return found

    def _live(self, request: SearchRequest) -> tuple[str, list[object]]:
        """WHERE fragment for a live match of the owner (with `q` in scope), and its parameters."""
        sql = f"d.user_id = %s AND d.search_vector @@ q.q AND {live_sql('d', owner_param=True)}" + "".join(
            f" AND d.scope_{name} = %s" for name in request.facets
        )
        return sql, [request.user_id, request.user_id, *request.facets.values()]

    def _score(self) -> str:
        """Text rank × recency decay; one parameter: now."""
        return f"ts_rank(d.search_vector, q.q) * exp(-({self.age_days_sql}) * ln(2) / {half_life_case()})"

    def _fetch(self, sql: str, params: list[object], in_conflict: bool) -> list[Candidate]:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return [
                Candidate(str(uuid.UUID(str(i))), bag_id, polarity, float(score), in_conflict)
                for i, bag_id, polarity, score, *_ in cursor.fetchall()
            ]

    def _conflict_candidates(
        self, request: SearchRequest, query: str, conflict_bags: list[str]
    ) -> list[Candidate]:
        """Every polarity's best matches in the conflict bags, which are few: read by bag."""
        if not conflict_bags:
            return []
        live, live_params = self._live(request)
        sql = f"""
WITH q AS (SELECT to_tsquery('{TS_CONFIG}', %s) AS q)
SELECT y.id, y.bag_id, y.polarity, y.score FROM (
    SELECT d.id, d.bag_id, d.polarity, {self._score()} AS score,
           row_number() OVER (PARTITION BY d.polarity ORDER BY {self._score()} DESC, d.id) AS place
    FROM q, unnest(%s::text[]) AS cb(id)
    JOIN deposits_deposit d ON d.user_id = %s AND d.bag_id = cb.id
    WHERE {live}
) y WHERE y.place <= %s
"""
        params = [
            query,
            request.now,
            request.now,
            conflict_bags,
            request.user_id,
            *live_params,
            request.per_class,
        ]
        return self._fetch(sql, params, True)

    def _top_by_polarity(
        self, request: SearchRequest, query: str, conflict_bags: list[str]
    ) -> list[Candidate]:
        """Few matches: score them all, one top-N per polarity from the (user, polarity, tsv) index."""
        live, live_params = self._live(request)
        # The conflict bags' list is sent as a literal, so the planner hashes it once.
        sql = f"""
WITH q AS (SELECT to_tsquery('{TS_CONFIG}', %s) AS q)
SELECT x.id, x.bag_id, x.polarity, x.score FROM q, unnest(%s::text[]) AS pol(p) CROSS JOIN LATERAL (
    SELECT d.id, d.bag_id, d.polarity, {self._score()} AS score FROM deposits_deposit d
    WHERE d.polarity = pol.p AND {live} AND NOT (d.bag_id = ANY(%s::text[]))
    ORDER BY score DESC, d.id LIMIT %s
) x
"""
        params = [query, list(POLARITIES), request.now, *live_params, conflict_bags, request.per_class]
        return self._fetch(sql, params, False)

    def _newest_first(
        self, request: SearchRequest, query: str, conflict_bags: list[str], polarity: str
    ) -> list[Candidate]:
        """Many matches: walk them newest first and stop once no older one can make the top N.

        A match of age a scores at most MAX_TEXT_RANK × decay(a), and decay only falls with
        age, so once the N-th best score seen beats that bound for the oldest row read, the
        rest cannot enter. Exact, and it reads a few days' worth of a common word's matches.
        """
        live, live_params = self._live(request)
        sql = f"""
WITH q AS (SELECT to_tsquery('{TS_CONFIG}', %s) AS q)
SELECT d.id, d.bag_id, d.polarity, {self._score()} AS score, d.created_at
FROM q, deposits_deposit d
WHERE d.polarity = %s AND {live} AND NOT (d.bag_id = ANY(%s::text[]))
  AND d.created_at <= %s AND (d.created_at, d.id) < (%s, %s)
ORDER BY d.created_at DESC, d.id DESC LIMIT %s
"""
        best: list[Candidate] = []
        # Keyset paging on (created_at, id): a batch write gives many rows one timestamp.
        after_time, after_id = request.now + timedelta(days=1), uuid.UUID(int=2**128 - 1)
        chunk = NEWEST_FIRST_CHUNK
        while True:
            params = [
                query,
                request.now,
                polarity,
                *live_params,
                conflict_bags,
                after_time,
                after_time,
                after_id,
                chunk,
            ]
            with connection.cursor() as cursor:
                cursor.execute(sql, params)
                rows = cursor.fetchall()
            for i, bag_id, pol, score, _ in rows:
                best.append(Candidate(str(uuid.UUID(str(i))), bag_id, pol, float(score), False))
            best = sorted(best, key=lambda c: (-c.score, c.id))[: request.per_class]
            if len(rows) < chunk:
                return best  # every match of this polarity has been read
            after_id, after_time = rows[-1][0], rows[-1][4]
            age_days = (request.now - after_time).total_seconds() / 86400
            bound = MAX_TEXT_RANK * decay(age_days, polarity)
            if len(best) == request.per_class and best[-1].score > bound:
                return best
            chunk = min(chunk * 2, NEWEST_FIRST_MAX_CHUNK)

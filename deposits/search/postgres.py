"""PostgreSQL full-text search: a GIN-indexed `tsvector` per deposit, and each bag's live lexemes.

Each deposit has a generated `tsvector` over content + scope note, GIN-indexed as (user_id,
polarity, tsv); each bag also keeps the lexemes of its live deposits.

A query for a common word can match most of an owner's deposits, so recall never reads and
sorts every match:

- the aggregate flags come from the owner's bags (a bag matches when any of its live deposits
  does, which is exactly what an OR-of-words query on the union of their lexemes says);
- each polarity is asked for the places the slice can give it (its reserved ones and the spare
  ones; more only once another polarity turns out to hold fewer matches than its places), and
  first of the matching conflict bags' deposits, from the copies PostgreSQL keeps of them
  (deposits.sql.conflict_copies): every one of those comes before any match outside conflict,
  so a polarity they hold enough of needs nothing else, and a large owner's conflict bags hold a
  few percent of its deposits;
- the best hits of each polarity, in recall's order (conflict bags first, then score), come
  from a walk newest first (of the copies, or of all the owner's deposits for a polarity the
  copies leave short), window by window, that stops once no older match can enter the
  polarity's top N. The stop is proven:
  `ts_rank` gives each query lexeme a document holds once exactly 0.1/1.6449 (more when it is
  repeated, below 0.1) and divides by the number of lexemes, and the recency decay only falls
  with age. Matches that would rank above that (rare lexemes, documents holding several of the
  common ones, documents repeating one: an index on the lexemes each deposit repeats finds
  those, when few) are scored in full first, so every walked match ranks exactly what the
  lexemes it holds give, and the walk stops as soon as each polarity holds its N best.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import NamedTuple

from django.db import connection

from deposits.domain.recall import HALF_LIFE_DAYS, Candidate, decay, reserved_places
from deposits.domain.types import POLARITIES
from deposits.search.base import Aggregates, SearchBackend, SearchRequest, half_life_case
from deposits.sql import bag_terms, conflict_copies
from deposits.sql.rules import confident_stored_sql, in_bags_with_sql, in_conflict_stored_sql, live_sql

TS_CONFIG = "english"
# calc_rank_or (PostgreSQL's ts_rank of an unweighted tsvector against an OR of lexemes) adds,
# for each query lexeme a document holds at n positions, 0.1·Σ(j=1..n)1/j²/1.6449… (below 0.1),
# and divides the sum by the number of distinct query lexemes. So a document holding m of the
# query's k lexemes ranks below 0.1·m/k, and holding each once exactly 0.1/1.6449…·m/k (in single
# precision: the margin covers its rounding).
MAX_LEXEME_RANK = 0.1
SINGLE_LEXEME_RANK = 0.1 / 1.64493406685 * (1 + 1e-6)
# A walked lexeme's repeaters are scored in full, so the walk may count it at SINGLE_LEXEME_RANK,
# while expected in at most this many deposits (a common word a third of deposits repeat is not).
REPEAT_MATCHES = 1500
# The lexemes a deposit repeats, as deposits/0011's index has them.
REPEATED_LEXEMES = "atlaso_repeated_lexemes(d.search_vector)"
# Up to this many expected matches, scoring them all (one scan of the GIN index) costs less than
# walking: a walk reads every deposit of its windows by time, matching or not, a round trip each.
SCORE_ALL_MATCHES = 5000
# Else the rarest lexemes are scored in full while expected in this many deposits together, and
# so is the set of deposits holding several of the walked lexemes, when expected this small.
FULL_MATCHES = 1500
TIER_MATCHES = 5000
# A tier ("two of these five words") of at most this many combinations of the walked lexemes
# (its tsquery is folded, `_at_least_of`, but each combination is still one way a deposit gets in).
MAX_TIER_CLAUSES = 64
# The walk's first window, and how much each later one may grow: towards the age that closes a
# full class, or, for a class with too few matches yet, by their rate so far.
FIRST_WINDOW_DAYS = 2.0
WINDOW_GROWTH = 4.0
SPARSE_GROWTH = 16.0
# A window read for conflict bags alone (a polarity whose quiet bags can add nothing older) reads
# few rows, so it may grow this much at once.
CONFLICT_ONLY_GROWTH = 16.0
# Past this age a window reads everything older.
ALL_OLDER_DAYS = 36500.0
# Read the matching conflict bags' deposits first, from their copies (deposits.sql.conflict_copies);
# a test turns it off to hold the answer to what the deposits alone give.
CONFLICTS_FIRST = True
# The copies are a few percent of the deposits, so a walk reads few rows there: their plan counts
# each expected match this many times (it scores fewer in full, and walks more). In turn at 1M,
# 1 / 2 / 4 / 8: recall p50 12.6 / 11.7 / 11.0 / 11.0 ms, p99 30.3 / 22.6 / 21.9 / 19.9.
COPIES_PLAN_WEIGHT = 4
# pg_stats' lexeme frequencies are read once per this many seconds per database.
LEXEME_STATS_SECONDS = 600.0

_lexeme_stats: dict[str, tuple[float, dict[str, float] | None, float]] = {}


def lexeme_shares() -> tuple[dict[str, float], float] | None:
    """Share of deposits holding each common lexeme (ANALYZE's sample), and a ceiling for the rest.

    The ceiling is the share below which every other lexeme lies. None before the table was
    analyzed. The shares only steer the plan, never the answer.
    """
    return _element_shares("deposits_deposit", "search_vector")


def repeat_shares() -> tuple[dict[str, float], float] | None:
    """The same for the lexemes deposits repeat (ANALYZE samples deposits/0011's index too)."""
    return _element_shares("deposit_user_repeated", "atlaso_repeated_lexemes")


def _element_shares(table: str, column: str) -> tuple[dict[str, float], float] | None:
    key = f"{connection.settings_dict['NAME']}:{table}"
    read_at, shares, floor = _lexeme_stats.get(key, (-math.inf, None, 0.0))
    if time.monotonic() - read_at > LEXEME_STATS_SECONDS:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT most_common_elems::text::text[], most_common_elem_freqs::text::float8[] "
                "FROM pg_stats WHERE schemaname = current_schema() AND tablename = %s AND attname = %s",
                [table, column],
            )
            row = cursor.fetchone()
        shares, floor = None, 0.0
        if row is not None and row[0]:
            elements, frequencies = row
            # After one frequency per element: the lowest and highest of them, then the null share.
            shares, floor = dict(zip(elements, frequencies, strict=False)), float(frequencies[len(elements)])
        _lexeme_stats[key] = (time.monotonic(), shares, floor)
    return None if shares is None else (shares, floor)


def or_lexemes(tsquery: str) -> list[str] | None:
    """The distinct lexemes of a tsquery that is a plain OR of lexemes; None for any other shape.

    to_tsquery of OR-joined words is that shape unless the parser splits a word into a phrase,
    whose rank is not bounded the same way; such a query is scored in full.
    """
    lexemes = []
    for part in tsquery.split(" | ") if tsquery else []:
        inner = part[1:-1]
        if len(part) < 2 or part[0] != "'" or part[-1] != "'" or "\\" in inner:
            return None
        if "'" in inner.replace("''", ""):
            return None
        lexemes.append(inner.replace("''", "'"))
    return list(dict.fromkeys(lexemes))


def _quoted(lexeme: str) -> str:
    """A lexeme as a tsquery operand, taken as is (no stemming, no stop words)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def _any_of(lexemes: Iterable[str]) -> str:
    return " | ".join(_quoted(lexeme) for lexeme in lexemes)


def _at_least_of(count: int, lexemes: Sequence[str]) -> str:
    """A tsquery that matches exactly the deposits holding at least `count` of the `lexemes`.

    It is built as the first and `count - 1` of the rest, or `count` of the rest. It matches what
    the OR of every `count`-combination's AND does, in O(k·count) operands instead of C(k, count)
    clauses, and a GIN scan evaluates it for every candidate: "two of six" 10.9 → 5.6 ms at 1M.
    """
    if count == 1:
        return f"({_any_of(lexemes)})"
    if len(lexemes) == count:
        return "(" + " & ".join(map(_quoted, lexemes)) + ")"
    first, rest = lexemes[0], lexemes[1:]
    return f"({_quoted(first)} & {_at_least_of(count - 1, rest)} | {_at_least_of(count, rest)})"


def _at_least(shares: Sequence[float], count: int) -> float:
    """Chance that at least `count` of independent events with these chances happen."""
    held = [1.0]
    for share in shares:
        after = [0.0] * (len(held) + 1)
        for number, chance in enumerate(held):
            after[number] += chance * (1 - share)
            after[number + 1] += chance * share
        held = after
    return sum(held[count:])


@dataclass(frozen=True, slots=True)
class WalkPlan:
    """Which matches are scored in full, which are walked newest first, and the walk's bound."""

    full: str | None  # tsquery (lexemes as is) of the matches scored in full
    walk: str | None  # tsquery of the matches walked newest first
    bound: float  # a walked match outside `full` and `repeats` ranks at most this
    repeats: str | None = None  # tsquery of the walked lexemes whose repeaters are scored in full


def walk_plan(
    lexemes: list[str],
    expected_matches: int,
    shares: tuple[dict[str, float], float] | None,
    repeats: tuple[dict[str, float], float] | None = None,
) -> WalkPlan:
    """Split the query so the walk's bound is as low as a cheap full scoring allows.

    Two ways, the lower bound wins (then the cheaper): the rarest lexemes scored in full (at most
    FULL_MATCHES expected matches together), or none; then, of the lexemes left, the deposits
    holding at least `tier` of them, when expected at most TIER_MATCHES. A walked match holds
    none of the former and fewer than `tier` of the latter. Each of those counts MAX_LEXEME_RANK,
    or SINGLE_LEXEME_RANK when its repeaters (by `repeats`, the shares of deposits repeating
    each lexeme) are few enough to score in full too; the bound sums the `tier − 1` largest, / k.
    """
    if expected_matches <= SCORE_ALL_MATCHES:
        return WalkPlan(_any_of(lexemes), None, 0.0)
    expected = _expected_per_lexeme(lexemes, expected_matches, shares)
    if _expected_union(lexemes, expected, expected_matches) <= SCORE_ALL_MATCHES:
        return WalkPlan(_any_of(lexemes), None, 0.0)
    options = [
        _plan_scoring(rare, lexemes, expected, expected_matches, repeats)
        for rare in ([], _rarest(lexemes, expected))
    ]
    return min(options, key=lambda option: (option.bound, option.cost)).plan


def _expected_per_lexeme(
    lexemes: list[str], expected_matches: int, shares: tuple[dict[str, float], float] | None
) -> dict[str, float]:
    """How many of the expected matches hold each lexeme (all of them, without stats)."""
    if shares is None:
        return dict.fromkeys(lexemes, float(expected_matches))
    share_of, floor = shares
    return {lexeme: min(1.0, share_of.get(lexeme, floor)) * expected_matches for lexeme in lexemes}


def _expected_union(lexemes: list[str], expected: dict[str, float], expected_matches: int) -> float:
    """How many deposits are expected to hold any of the lexemes, were they independent."""
    return expected_matches * (1 - math.prod(1 - expected[lexeme] / expected_matches for lexeme in lexemes))


def _rarest(lexemes: list[str], expected: dict[str, float]) -> list[str]:
    """The rarest lexemes, as many as FULL_MATCHES expected matches together allow."""
    rarest: list[str] = []
    for lexeme in sorted(lexemes, key=lambda lexeme: expected[lexeme]):
        if sum(expected[r] for r in rarest) + expected[lexeme] > FULL_MATCHES:
            break
        rarest.append(lexeme)
    return rarest


class _PlanOption(NamedTuple):
    bound: float
    cost: float  # matches expected to be scored in full
    plan: WalkPlan


def _plan_scoring(
    rare: list[str],
    lexemes: list[str],
    expected: dict[str, float],
    expected_matches: int,
    repeats: tuple[dict[str, float], float] | None,
) -> _PlanOption:
    """The plan that scores the `rare` lexemes' matches in full and walks the others'."""
    walked = [lexeme for lexeme in lexemes if lexeme not in rare]
    cost = sum(expected[lexeme] for lexeme in rare)
    if not walked:
        return _PlanOption(0.0, cost, WalkPlan(_any_of(lexemes), None, 0.0))
    clauses, held = [_quoted(lexeme) for lexeme in rare], len(walked)
    tier = _tier(walked, expected, expected_matches)
    if tier is not None:
        size, holding = tier
        clauses.append(_at_least_of(size, walked))
        held, cost = size - 1, cost + holding
    tight = _tight(walked, expected_matches, repeats)
    bound = _walked_bound(walked, tight, held) / len(lexemes)
    plan = WalkPlan(" | ".join(clauses) or None, _any_of(walked), bound, _any_of(tight) if tight else None)
    return _PlanOption(bound, cost, plan)


def _tier(walked: list[str], expected: dict[str, float], expected_matches: int) -> tuple[int, float] | None:
    """The smallest tier of the walked lexemes held by at most TIER_MATCHES expected deposits.

    Tier t is the deposits holding at least t of the walked lexemes together. Returns the fewest
    such t with how many deposits are expected to hold them (those are scored in full); None when no
    tier within MAX_TIER_CLAUSES is that rare.
    """
    chances = [expected[lexeme] / expected_matches for lexeme in walked]
    for tier in range(2, len(walked) + 1):
        if math.comb(len(walked), tier) > MAX_TIER_CLAUSES:
            return None
        holding = expected_matches * _at_least(chances, tier)
        if holding <= TIER_MATCHES:
            return tier, holding
    return None


def _walked_bound(walked: list[str], tight: list[str], held: int) -> float:
    """The most rank a walked match's `held` lexemes can give, before dividing by k."""
    counted = sorted(
        (SINGLE_LEXEME_RANK if lexeme in tight else MAX_LEXEME_RANK for lexeme in walked), reverse=True
    )
    return sum(counted[:held])


def _tight(
    walked: list[str], expected_matches: int, repeats: tuple[dict[str, float], float] | None
) -> list[str]:
    """The walked lexemes whose repeaters are few enough to score in full (none without stats)."""
    if repeats is None:
        return []
    share_of, floor = repeats
    return [lexeme for lexeme in walked if share_of.get(lexeme, floor) * expected_matches <= REPEAT_MATCHES]


# Whether a bag whose lexemes are not all in its row matches: one whose lexemes outgrew a tsvector
# in one write (its row's are NULL) is asked of its live deposits; one whose lexemes spilled into
# chunks (deposits.sql.bag_terms) is asked of them. A function, not the statement's own EXISTS:
# the aggregate is planned on every recall, and planning that subquery (a join to the edges for
# `live`) was 0.6-0.8 ms of the statement's 1.0-1.2, for bags few owners have.
OVERFLOW_MATCH_FUNCTION = "atlaso_overflow_bag_matches"


def _bag_matches_sql(bag: str, query: str) -> str:
    """SQL that holds when the words (tsquery `query`) match a live deposit of the bag.

    It asks as the aggregate does (`_matching_bags`): the bag's row, else its chunks. `query` is an
    expression, used twice.
    """
    return (
        f"(coalesce({bag}.live_terms @@ {query}, false) OR ({bag}.terms_overflow AND "
        f"{OVERFLOW_MATCH_FUNCTION}({bag}.user_id, {bag}.id, {query}, {bag}.live_terms)))"
    )


def overflow_match_function_sql() -> str:
    """The function the aggregate calls, as the migrations create it (a test holds the two equal)."""
    return f"""CREATE OR REPLACE FUNCTION {OVERFLOW_MATCH_FUNCTION}(owner text, bag text, query tsquery, row_terms tsvector)
RETURNS boolean
LANGUAGE plpgsql STABLE
AS $function${_OVERFLOW_MATCH_BODY}$function$"""


_OVERFLOW_MATCH_BODY = f"""
BEGIN
    IF row_terms IS NULL THEN
        RETURN EXISTS (
            SELECT 1 FROM deposits_deposit d
            WHERE d.user_id = owner AND d.bag_id = bag AND d.search_vector @@ query AND {live_sql("d")}
        );
    END IF;
    -- The row did not match (the aggregate asks it first). Recall's tsquery ORs lexemes and, for a
    -- word the parser splits, phrases, which never match a vector without positions: so the row
    -- and chunks together match exactly when one chunk does.
    RETURN EXISTS (SELECT 1 FROM {bag_terms.TABLE} t WHERE t.bag_id = bag AND t.terms @@ query);
END
"""


@dataclass(frozen=True, slots=True)
class _Matched:
    aggregates: Aggregates
    # The matching bags in conflict, as one text of ids separated by spaces (an id is
    # `bag_` and hex): sent back with each read as one value, not an array of hundreds.
    conflict_bags: str
    tsquery: str
    # Live deposits of the matching bags per (conflict?, polarity): at least their matches.
    live: dict[tuple[bool, str], int]

    @property
    def deposits(self) -> int:
        return sum(self.live.values())


@dataclass
class _Window:
    """How far the walk has read, as the bounds in days of the next window.

    The next window holds the matches younger than `lower` days (None: every older one) and not
    younger than `upper` days (None: up to the newest).
    """

    lower: float | None
    upper: float | None = None


@dataclass
class _Class:
    """One polarity's best matches so far, in recall's order: conflict bags first, then score."""

    need: int  # how many of its first matches the walk must find (N)
    best: list[Candidate] = field(default_factory=list)
    open: bool = True
    # Some matching bag of this polarity is in conflict: an older match may outrank any other.
    conflicts: bool = False
    # No older match from a bag outside conflict can enter its best: the walk reads back only
    # the conflict bags for it.
    conflict_only: bool = False

    def quiet_settled(self, ceiling: float) -> bool:
        """Whether no older match from a quiet bag, scoring at most `ceiling`, can enter the class.

        A quiet bag is one not in conflict. None can when the class is full and its last quiet
        member scores above `ceiling` (or it has none).
        """
        quiet = [c for c in self.best if not c.in_conflict]
        return len(self.best) == self.need and (not quiet or quiet[-1].score > ceiling)

    def deciding(self) -> list[Candidate]:
        """The members that decide the next window.

        Those from conflict bags once only they can change, else all.
        """
        if self.conflict_only:
            return [c for c in self.best if c.in_conflict]
        return self.best


@dataclass(frozen=True, slots=True)
class _Part:
    """The matches of one tsquery in `column`, an indexed vector, with a WHERE fragment of its own.

    The fragment narrows them, as to a time window.
    """

    matches: str
    matches_params: list[object]
    where: str = ""
    where_params: list[object] = field(default_factory=list)
    column: str = "d.search_vector"


@dataclass(frozen=True, slots=True)
class _Source:
    """Where a walk reads deposits: a table with the deposits' columns recall reads."""

    table: str
    # Every row is of a bag in conflict.
    in_conflict: bool = False
    # It has deposits/0011's index of the lexemes each deposit repeats.
    repeats: bool = True


DEPOSITS = _Source("deposits_deposit")
# Without the repeated lexemes' index: a walk of the copies counts each walked lexeme at the plain
# 0.1 and reads further back, which costs about what scoring their repeaters did (in turn at 1M,
# recall p50 11.1 / 11.3 ms with it, 11.1 / 11.1 without; p99 24.0 / 23.8 and 20.5 / 21.0), and
# every copy written spares computing them.
COPIES = _Source(conflict_copies.TABLE, in_conflict=True, repeats=False)


def _plan(lexemes: list[str] | None, expected: int, source: _Source) -> WalkPlan:
    """How to read a source expected to hold `expected` matches, with what it indexes.

    The source holds at most `expected` matches: its matching bags' live deposits. A query that is
    no plain OR of lexemes has no rank bound and is scored in full.
    """
    if lexemes is None:
        return WalkPlan(None, None, 0.0)
    if expected > FULL_MATCHES:
        return walk_plan(lexemes, expected, lexeme_shares(), repeat_shares() if source.repeats else None)
    return walk_plan(lexemes, expected, None)


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
        matched = self._matching_bags(request, query)
        if matched.aggregates.bag_count == 0:
            return [], matched.aggregates, set()
        return self._best_per_class(request, query, matched), matched.aggregates, set()

    def bag_matches_sql(self, request: SearchRequest) -> tuple[str, list[object]] | None:
        if request.include_superseded:
            return None
        return _bag_matches_sql("bag", f"to_tsquery('{TS_CONFIG}', %s)"), [self.text_query(request.words)] * 2

    def bags_matching(self, request: SearchRequest, bag_ids: list[str]) -> set[str]:
        if request.include_superseded or not bag_ids:
            return super().bags_matching(request, bag_ids)
        sql = f"""
WITH q AS (SELECT to_tsquery('{TS_CONFIG}', %s) AS q)
SELECT bag.id FROM q, deposits_scopebag bag
WHERE bag.user_id = %s AND bag.id = ANY(%s) AND {_bag_matches_sql("bag", "q.q")}
"""
        with connection.cursor() as cursor:
            cursor.execute(sql, [self.text_query(request.words), request.user_id, bag_ids])
            return {row[0] for row in cursor.fetchall()}

    def _matching_bags(self, request: SearchRequest, query: str) -> _Matched:
        facets = "".join(f" AND bag.{name} = %s" for name in request.facets)
        sides = [(side, p) for side in (True, False) for p in POLARITIES]
        live = ",\n       ".join(
            f"coalesce(sum(bag.live_{p}) FILTER (WHERE {'' if side else 'NOT '}bag.in_conflict), 0)"
            for side, p in sides
        )
        # Each matching bag's rules come from its stored rule columns (deposits/0009; recounting
        # them from the live counts cost 0.5 ms at 4,500 bags), and only the columns read are
        # carried: a bag row also holds its lexemes, which the aggregate never needs.
        columns = (
            f"bag.id, {', '.join(f'bag.live_{p}' for p in POLARITIES)}, "
            f"{in_conflict_stored_sql('bag')} AS in_conflict, {confident_stored_sql('bag')} AS confident"
        )
        sql = f"""
WITH q AS (SELECT to_tsquery('{TS_CONFIG}', %s) AS q),
matched AS (
    SELECT {columns} FROM q, deposits_scopebag bag
    WHERE bag.user_id = %s{facets} AND bag.live_terms @@ q.q
    UNION ALL
    -- A bag whose lexemes are not all in its row, unless its row matched.
    SELECT {columns} FROM q, deposits_scopebag bag
    WHERE bag.user_id = %s{facets} AND bag.terms_overflow AND NOT coalesce(bag.live_terms @@ q.q, false)
      AND {OVERFLOW_MATCH_FUNCTION}(bag.user_id, bag.id, q.q, bag.live_terms)
)
SELECT count(*),
       count(*) FILTER (WHERE bag.in_conflict),
       count(*) FILTER (WHERE bag.confident),
       coalesce(string_agg(bag.id, ' ') FILTER (WHERE bag.in_conflict), ''),
       (SELECT q.q::text FROM q),
       {live}
FROM matched bag
"""
        facet_values = list(request.facets.values())
        with connection.cursor() as cursor:
            cursor.execute(sql, [query, request.user_id, *facet_values, request.user_id, *facet_values])
            bags, conflicts, confident, conflict_ids, tsquery, *counts = cursor.fetchone()
        return _Matched(
            Aggregates(bag_count=bags, conflict_bag_count=conflicts, confident_bag_count=confident),
            conflict_ids,
            tsquery or "",
            {side: int(count) for side, count in zip(sides, counts, strict=True)},
        )

    def _score(self) -> str:
        """Text rank × recency decay, as the statement that scores every match has it.

        It takes one parameter: now.
        """
        return f"ts_rank(d.search_vector, q.q) * exp(-({self.age_days_sql}) * ln(2) / {half_life_case()})"

    def _best_per_class(self, request: SearchRequest, query: str, matched: _Matched) -> list[Candidate]:
        """Each polarity's first hits in recall's order (conflict bags first, then score).

        It reads as many of each as `slice_hits` can pick of it for a slice of `request.per_class`:
        its reserved places and the spare ones, and then, once another polarity turns out to hold
        fewer matches than its places, those too (a polarity asked for N that returns fewer has no
        more).
        """
        quota = reserved_places(request.per_class)
        spare = max(0, request.per_class - sum(quota.values()))
        # A polarity whose matching bags hold no live deposit of it has no match.
        present = {p for p in POLARITIES if matched.live[(True, p)] + matched.live[(False, p)] > 0}
        lexemes = or_lexemes(matched.tsquery)
        need = dict.fromkeys(POLARITIES, 0)
        best: dict[str, list[Candidate]] = {p: [] for p in POLARITIES}
        while more := _more_places(quota, spare, present, need, best):
            need.update(more)
            best.update(self._first(request, query, matched, lexemes, more))
        return [candidate for p in POLARITIES for candidate in best[p]]

    def _first(
        self,
        request: SearchRequest,
        query: str,
        matched: _Matched,
        lexemes: list[str] | None,
        need: dict[str, int],
    ) -> dict[str, list[Candidate]]:
        """The first `need[p]` matches of each polarity p in recall's order, exactly.

        The matching conflict bags' deposits are read first, from their copies
        (deposits.sql.conflict_copies): a polarity they hold `need[p]` matches of needs nothing
        else, since every one of them comes before any match outside conflict. The others are
        read from all the owner's deposits.
        """
        best: dict[str, list[Candidate]] = {}
        in_conflict = {p: n for p, n in need.items() if matched.live[(True, p)] > 0}
        if in_conflict and not request.facets and CONFLICTS_FIRST:
            expected = sum(matched.live[(True, p)] for p in in_conflict)
            plan = _plan(lexemes, round(expected * COPIES_PLAN_WEIGHT), COPIES)
            best = _held_in_conflict(
                self._walk(request, query, matched, plan, in_conflict, COPIES), in_conflict
            )
        rest = {p: n for p, n in need.items() if p not in best}
        if rest:
            best.update(
                self._walk(
                    request, query, matched, _plan(lexemes, matched.deposits, DEPOSITS), rest, DEPOSITS
                )
            )
        return best

    def _walk(
        self,
        request: SearchRequest,
        query: str,
        matched: _Matched,
        plan: WalkPlan,
        need: dict[str, int],
        source: _Source,
    ) -> dict[str, list[Candidate]]:
        """The first `need[p]` of each polarity p in recall's order among `source`'s matches."""
        classes = {
            polarity: _Class(wanted, conflicts=source.in_conflict or matched.live[(True, polarity)] > 0)
            for polarity, wanted in need.items()
        }
        parts = _scored_in_full(plan)
        window = _Window(FIRST_WINDOW_DAYS)
        while True:
            walking = plan.walk is not None and any(entry.open for entry in classes.values())
            if walking:
                parts.append(self._window(window, classes, plan, request.now, source))
            if not parts:
                break
            self._run(request, query, matched.conflict_bags, parts, classes, source)
            if not walking:
                break
            self._advance(window, classes, plan.bound)
            parts = []
        return {polarity: entry.best for polarity, entry in classes.items()}

    def _window(
        self, window: _Window, classes: dict[str, _Class], plan: WalkPlan, now: datetime, source: _Source
    ) -> _Part:
        """The walk's next window: the open polarities' matches within its time span.

        Those scored in full are left out (a repeater read again is counted once).
        """
        where, params = _open_polarities(classes, source)
        if window.lower is not None:
            where += " AND d.created_at >= %s"
            params.append(now - timedelta(days=window.lower))
        if window.upper is not None:
            where += " AND d.created_at < %s"
            params.append(now - timedelta(days=window.upper))
        if plan.full:
            where += " AND NOT (d.search_vector @@ %s::tsquery)"
            params.append(plan.full)
        return _Part("%s::tsquery", [plan.walk], where, params)

    def _run(
        self,
        request: SearchRequest,
        query: str,
        conflict_bags: str,
        parts: list[_Part],
        classes: dict[str, _Class],
        source: _Source,
    ) -> None:
        """Read the parts' matches once, and keep the best of each open polarity."""
        live = live_sql("d", owner_param=True)
        facet_params: list[object] = []
        if request.facets:
            live += f" AND {in_bags_with_sql(request.facets)}"
            facet_params = [request.user_id, *request.facets.values()]
        # UNION ALL: a deposit two parts find (a repeater holding two of the words) comes once
        # per part, identical, so each polarity reads its first N × parts rows, which hold its N
        # best deposits, and the copies are dropped below. Removing them in SQL (UNION) hashed
        # every match: up to 5 ms of a 34 ms read.
        reads = "\n    UNION ALL".join(
            f"""
    SELECT d.id, d.bag_id, d.polarity, {self._score()} AS score,
           d.bag_id IN (SELECT cb.id FROM cb) AS in_conflict
    FROM q, {source.table} d
    WHERE d.user_id = %s AND {part.column} @@ {part.matches} AND {live}{part.where}"""
            for part in parts
        )
        # The matches are read once; each polarity's best is then a bounded top-N over them, which
        # costs far less than sorting them all. The conflict bags are sent once.
        sql = f"""
WITH q AS (SELECT to_tsquery('{TS_CONFIG}', %s) AS q),
cb AS (SELECT unnest(string_to_array(%s, ' ')) AS id),
m AS MATERIALIZED ({reads}
)
SELECT x.id::text, x.bag_id, x.polarity, x.score, x.in_conflict
FROM unnest(%s::text[]) AS c(polarity) CROSS JOIN LATERAL (
    SELECT m.id, m.bag_id, m.polarity, m.score, m.in_conflict FROM m
    WHERE m.polarity = c.polarity
    ORDER BY m.in_conflict DESC, m.score DESC, m.id LIMIT %s
) x"""
        params: list[object] = [query, conflict_bags]
        for part in parts:
            params += [request.now, request.user_id, *part.matches_params, request.user_id]
            params += [*facet_params, *part.where_params]
        params += [
            [polarity for polarity, entry in classes.items() if entry.open],
            max(entry.need for entry in classes.values()) * len(parts),
        ]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            _keep_best(cursor.fetchall(), classes)

    def _advance(self, window: _Window, classes: dict[str, _Class], bound: float) -> None:
        """Close the polarities no older match can enter, and choose the next window.

        A match older than the window's edge ranks below `bound` and has decayed below
        B = bound × decay(edge). An older match from a quiet bag (not in conflict) can enter a
        polarity's top N only while it holds fewer than N or its last quiet member scores at
        most B; one from a conflict bag ranks before every quiet one, so it can enter while the
        polarity holds fewer than its N from conflict bags or the N-th of them scores at most B.
        Once neither can, the polarity is closed; once only the second can, the walk reads back
        the conflict bags alone for it. Both stay so: B only falls and the members only improve.
        """
        if window.lower is None:
            for entry in classes.values():
                entry.open = False
            return
        edge = window.lower
        reaches = [_reach(entry, polarity, edge, bound) for polarity, entry in classes.items() if entry.open]
        lower = max([edge, *reaches])
        window.upper, window.lower = edge, None if lower > ALL_OLDER_DAYS else lower


def _more_places(
    quota: dict[str, int],
    spare: int,
    present: set[str],
    need: dict[str, int],
    best: dict[str, list[Candidate]],
) -> dict[str, int]:
    """How many first matches to ask each polarity for next (none: the slice is settled).

    Each is asked for its reserved places and the spare ones, plus the places a polarity that
    turned out to hold fewer matches than asked (or none) leaves empty; a polarity already asked
    for as many is not asked again.
    """
    exhausted = {p for p in POLARITIES if p not in present or len(best[p]) < need[p]}
    missing = sum(max(0, quota[p] - len(best[p])) for p in exhausted)
    asked = {p: quota[p] + spare + missing for p in POLARITIES if p not in exhausted}
    return {p: n for p, n in asked.items() if n > need[p]}


def _held_in_conflict(found: dict[str, list[Candidate]], need: dict[str, int]) -> dict[str, list[Candidate]]:
    """The polarities whose first `need[p]` matches the conflict bags' copies hold, with them."""
    best: dict[str, list[Candidate]] = {}
    for polarity, wanted in need.items():
        held = [candidate for candidate in found[polarity] if candidate.in_conflict]
        if len(held) >= wanted:
            best[polarity] = held[:wanted]
    return best


def _scored_in_full(plan: WalkPlan) -> list[_Part]:
    """The parts a walk reads once, before its windows: the matches its bound does not hold."""
    parts: list[_Part] = []
    if plan.full or not plan.walk:
        # Scored in full: the whole query when nothing is walked (also a query whose rank
        # has no bound), else the matches that would rank above the walk's bound.
        parts.append(_Part("q.q", []) if plan.full is None else _Part("%s::tsquery", [plan.full]))
    if plan.repeats is not None:
        # The deposits repeating a lexeme the bound counts once, by deposits/0011's index.
        parts.append(_Part("%s::tsquery", [plan.repeats], column=REPEATED_LEXEMES))
    return parts


def _open_polarities(classes: dict[str, _Class], source: _Source) -> tuple[str, list[object]]:
    """The WHERE fragment a window reads the open polarities with, and its parameters.

    Each polarity is read whole, or only its deposits in conflict bags once no quiet one can enter
    (a source of conflict bags alone needs no second look at the bag).
    """
    every, conflict_only = [], []
    for polarity, entry in classes.items():
        if entry.open:
            (conflict_only if entry.conflict_only and not source.in_conflict else every).append(polarity)
    in_conflict = "d.polarity = ANY(%s::text[]) AND d.bag_id IN (SELECT cb.id FROM cb)"
    if every and conflict_only:
        return f" AND (d.polarity = ANY(%s::text[]) OR ({in_conflict}))", [every, conflict_only]
    if every:
        return " AND d.polarity = ANY(%s::text[])", [every]
    return f" AND {in_conflict}", [conflict_only]


def _keep_best(rows: list[tuple], classes: dict[str, _Class]) -> None:
    """Add a read's rows to their polarities' best, each deposit once, and keep each one's first N."""
    touched = set()
    kept = {candidate.id for entry in classes.values() for candidate in entry.best}
    for deposit_id, bag_id, polarity, score, in_conflict in rows:
        if deposit_id in kept:
            continue  # a copy from another part, or a repeater read again by a later window
        kept.add(deposit_id)
        classes[polarity].best.append(Candidate(deposit_id, bag_id, polarity, float(score), in_conflict))
        touched.add(polarity)
    for polarity in touched:
        best = classes[polarity].best
        best.sort(key=lambda candidate: candidate.order_key)
        del best[classes[polarity].need :]


def _reach(entry: _Class, polarity: str, edge: float, bound: float) -> float:
    """How many days back the next window must read for one open polarity.

    Its matches younger than `edge` days are read. Closes the polarity (and asks for nothing older)
    when no older match can enter its best.
    """
    ceiling = bound * decay(edge, polarity)
    if entry.quiet_settled(ceiling):
        entry.conflict_only = entry.conflicts
    counted = entry.deciding()
    if len(counted) == entry.need:
        nth = counted[-1].score
        if nth > ceiling:
            entry.open = False
            return edge
        # The age past which this N-th best beats every older match; read at most
        # WINDOW_GROWTH times further, as the matches on the way may close it sooner.
        needed = HALF_LIFE_DAYS[polarity] * math.log2(bound / nth) * (1 + 1e-9)
        return min(needed, edge * (CONFLICT_ONLY_GROWTH if entry.conflict_only else WINDOW_GROWTH))
    if counted and not entry.conflict_only:
        # Too few yet: read as far again as these took, times how many are missing.
        return edge * min(SPARSE_GROWTH, 1.5 * entry.need / len(counted))
    return edge * (CONFLICT_ONLY_GROWTH if entry.conflict_only else SPARSE_GROWTH)

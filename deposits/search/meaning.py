"""Search by meaning: one owner's deposits nearest a query vector, on either database.

PostgreSQL here has no vector extension, so the vectors are plain rows (deposits_depositvector:
int8 and a binary code each) and the search is done in this process, the same way on both
databases:

- each process keeps, per owner and model, the owner's binary codes in memory (`OwnerCodes`: 8
  bytes a 64 dimensions, and the row id and bag of each), read once and then only the rows
  written since (ids only grow: one embedding job writes at a time); an erased deposit's
  code may linger until the next full read, and is dropped at the exact step below;
- the Hamming distance of the query's code to every code of the owner (one XOR and popcount
  over a few megabytes at most: about a millisecond for 100,000 deposits) picks the
  `CANDIDATES` nearest;
- one statement reads those candidates' int8 vectors with what recall needs of their deposits
  and bags (live, in the scope asked for), and the exact cosine ranks them.

Asking PostgreSQL for the Hamming distances instead (`bit_count(code # q)` over an index-only scan
of the owner's codes) took 45 ms for the bench's owner of 102,191 deposits, and 130–220 ms as a
plain scan (docs/BENCHMARKS.md, "Recall by meaning").
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import numpy as np
from django.db import connection
from django.utils.dateparse import parse_datetime

from deposits.domain.meaning import binary_code, code_bytes, code_columns, dequantized, hamming, nearest
from deposits.domain.recall import Candidate, decay
from deposits.search.base import SearchRequest
from deposits.sql.rules import confident_sql, in_bags_with_sql, in_conflict_sql, superseded_sql

# Codes ranked exactly per recall (the nearest by Hamming distance): at least this many, and
# four times the limit.
CANDIDATES = 200
# Deposits found by meaning per recall: the nearest above the floor among the candidates, at
# least this many and four times the limit (the slice can pick `limit` of one polarity). They are
# the meaning ranking fused with the words', and the flags count their bags.
MATCHES = 50
# Codes one process keeps in memory, all owners together (≈ 60 bytes each at 384 dimensions:
# 30 MB); the owners recalled least recently are forgotten first.
CACHED_CODES = 500_000
# An owner's codes are read whole again after this long, which forgets erased deposits' codes.
RELOAD_SECONDS = 900.0


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """A calibrated model as the search needs it."""

    name: str
    dims: int
    floor: float
    centre: np.ndarray


@dataclass(frozen=True, slots=True)
class MeaningMatch:
    """A deposit found by meaning: its candidate (score = similarity × recency decay)."""

    candidate: Candidate
    similarity: float
    confident: bool
    superseded: bool
    # Whether the words match a deposit of its bag, when the search was given the condition.
    bag_matches_words: bool | None = None


@dataclass(frozen=True)
class OwnerCodes:
    """One owner's codes of one model as of `last_id`: a snapshot, replaced whole by newer ones.

    It is replaced when newer codes are read, never changed in place, so a recall reading it sees
    ids, bags and codes of one length.
    """

    ids: np.ndarray  # int64: the vector rows' ids, ascending
    bags: np.ndarray  # int32: index into bag_names
    codes: np.ndarray  # uint64 (words, n): each code a column (deposits.domain.meaning.code_columns)
    # Shared by the owner's snapshots and only ever added to: an older snapshot's bags index the
    # names it knew.
    bag_names: list[str]
    bag_index: dict[str, int]
    last_id: int
    read_at: float

    @property
    def size(self) -> int:
        return len(self.ids)


_cache: OrderedDict[tuple[str, str, str], OwnerCodes] = OrderedDict()
_lock = threading.Lock()


def forget_cached_codes() -> None:
    """Drop every owner's codes this process holds (tests; a bench measuring a cold read)."""
    with _lock:
        _cache.clear()


def _read_codes(user_id: str, model: ModelInfo, after: int) -> tuple[list[int], list[bytes], list[str]]:
    """The owner's codes written after vector `after`, with their deposits' bags.

    Whether there are any is asked first, of the owner's head (deposits_vectorhead, a key
    lookup): PostgreSQL plans both `max(id)` and `id > after` from statistics that cannot know
    how an owner's ids lie, and read a large owner's by walking the whole table backwards or
    across (600–900 ms at 1M)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT last_id FROM deposits_vectorhead WHERE user_id = %s AND model = %s", [user_id, model.name]
        )
        head = cursor.fetchone()
        newest = None if head is None else head[0]
        if newest is None or newest <= after:
            return [], [], []
        cursor.execute(
            "SELECT v.id, v.code, d.bag_id FROM deposits_depositvector v "
            "JOIN deposits_deposit d ON d.id = v.deposit_id AND d.user_id = v.user_id "
            "WHERE v.user_id = %s AND v.model = %s AND v.id > %s AND v.id <= %s AND d.user_id = %s "
            "ORDER BY v.id",
            [user_id, model.name, after, newest, user_id],
        )
        rows = cursor.fetchall()
    return [row[0] for row in rows], [bytes(row[1]) for row in rows], [row[2] for row in rows]


def held_codes(user_id: str, model: ModelInfo) -> int:
    """How many of the owner's codes of `model` this process holds, without asking the database."""
    with _lock:
        held = _cache.get((connection.settings_dict["NAME"], user_id, model.name))
    return 0 if held is None else held.size


def owner_codes(user_id: str, model: ModelInfo) -> OwnerCodes:
    """The owner's codes of `model`, brought up to date (read whole when first asked or stale).

    The database is read outside the lock, so one owner's first read (most of a second for
    100,000 codes) holds up no other recall; of two snapshots made at once, the newer is kept."""
    key = (connection.settings_dict["NAME"], user_id, model.name)
    with _lock:
        held = _cache.get(key)
    if held is None or time.monotonic() - held.read_at > RELOAD_SECONDS:
        words = code_bytes(model.dims) // 8
        held = OwnerCodes(
            ids=np.zeros(0, dtype=np.int64),
            bags=np.zeros(0, dtype=np.int32),
            codes=np.zeros((words, 0), dtype=np.uint64),
            bag_names=[],
            bag_index={},
            last_id=0,
            read_at=time.monotonic(),
        )
    ids, codes, bags = _read_codes(user_id, model, held.last_id)
    with _lock:
        if ids:
            for bag in bags:
                if bag not in held.bag_index:
                    held.bag_index[bag] = len(held.bag_names)
                    held.bag_names.append(bag)
            held = replace(
                held,
                ids=np.concatenate([held.ids, np.asarray(ids, dtype=np.int64)]),
                bags=np.concatenate(
                    [held.bags, np.asarray([held.bag_index[b] for b in bags], dtype=np.int32)]
                ),
                codes=np.concatenate([held.codes, code_columns(codes, model.dims)], axis=1),
                last_id=ids[-1],
            )
        kept = _cache.get(key)
        if kept is None or kept.last_id <= held.last_id or kept.read_at < held.read_at:
            _cache[key] = kept = held
        _cache.move_to_end(key)
        _evict()
        return kept


def _evict() -> None:
    total = sum(held.size for held in _cache.values())
    while total > CACHED_CODES and len(_cache) > 1:
        _, dropped = _cache.popitem(last=False)
        total -= dropped.size


def _facet_bags(request: SearchRequest, held: OwnerCodes) -> np.ndarray | None:
    """Positions in `held.bag_names` of the owner's bags with the facets asked for (None: no filter)."""
    if not request.facets:
        return None
    conditions = "".join(f" AND fb.{name} = %s" for name in request.facets)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT fb.id FROM deposits_scopebag fb WHERE fb.user_id = %s{conditions}",
            [request.user_id, *request.facets.values()],
        )
        names = [row[0] for row in cursor.fetchall()]
    return np.asarray([held.bag_index[n] for n in names if n in held.bag_index], dtype=np.int32)


def meaning_search(
    request: SearchRequest,
    query: np.ndarray,
    model: ModelInfo,
    held: OwnerCodes | None = None,
    words_bags: tuple[str, list[object]] | None = None,
) -> list[MeaningMatch]:
    """The owner's live deposits (superseded too if asked) nearer the query than the model's floor.

    Of its `CANDIDATES` nearest codes, the `MATCHES` nearest by exact cosine; each with its bag's
    flags.

    `held`: the owner's codes, when the caller has just brought them up to date. `words_bags`: a
    condition on the bag row `bag` (and its parameters) saying the words match the bag, read for
    each match in the same statement (`MeaningMatch.bag_matches_words`).
    """
    held = held if held is not None else owner_codes(request.user_id, model)
    if held.size == 0:
        return []
    distances = hamming(held.codes, binary_code(query, model.centre))
    allowed = _facet_bags(request, held)
    reachable = held.size
    if allowed is not None:
        outside = ~np.isin(held.bags, allowed)
        distances[outside] = model.dims + 1  # past every real distance
        reachable -= int(outside.sum())
    count = min(reachable, max(CANDIDATES, 4 * request.per_class))
    if count == 0:
        return []
    picked = held.ids[nearest(distances, count)]
    close = _closer_than_the_floor(query, model, picked, max(MATCHES, 4 * request.per_class))
    return _matches(request, model, close, words_bags) if close else []


def _id_list(ids: Iterable[int]) -> tuple[str, list[object]]:
    """`v.id` among these ids as SQL and its parameters, as each database reads a long list best.

    On PostgreSQL that is one array literal, as binding a list of ints there cost milliseconds.
    """
    ids = list(ids)
    if connection.vendor == "postgresql":
        return "v.id = ANY(%s::bigint[])", ["{" + ",".join(map(str, ids)) + "}"]
    return f"v.id IN ({', '.join(['%s'] * len(ids))})", ids


def _closer_than_the_floor(
    query: np.ndarray, model: ModelInfo, ids: np.ndarray, keep: int
) -> dict[int, float]:
    """Of these vectors, the `keep` nearest whose exact cosine to the query reaches the model's floor."""
    among, params = _id_list(int(i) for i in ids)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT v.id, v.vector FROM deposits_depositvector v WHERE {among}", params)
        rows = cursor.fetchall()
    if not rows:
        return {}
    similarities = dequantized([row[1] for row in rows], model.dims) @ query
    ranked = sorted(zip(similarities.tolist(), (row[0] for row in rows), strict=True), reverse=True)
    return {vector_id: similarity for similarity, vector_id in ranked[:keep] if similarity >= model.floor}


def _matches(
    request: SearchRequest,
    model: ModelInfo,
    close: dict[int, float],
    words_bags: tuple[str, list[object]] | None = None,
) -> list[MeaningMatch]:
    """The close vectors' deposits that recall may return, with their bags' flags.

    Those are the owner's, live unless superseded ones were asked for, in the scope asked.
    """
    words_sql, words_params = words_bags or ("NULL", [])
    superseded = superseded_sql("d", owner_param=True)
    live_filter = "" if request.include_superseded else f" AND NOT {superseded}"
    facet_sql = f" AND {in_bags_with_sql(request.facets)}" if request.facets else ""
    among, among_params = _id_list(close)
    sql = f"""
SELECT v.id, d.id, d.bag_id, d.polarity, d.created_at, {superseded} AS superseded,
       {in_conflict_sql("bag")} AS in_conflict, {confident_sql("bag")} AS confident,
       {words_sql} AS words
FROM deposits_depositvector v
JOIN deposits_deposit d ON d.id = v.deposit_id
JOIN deposits_scopebag bag ON bag.id = d.bag_id
WHERE {among} AND v.model = %s AND d.user_id = %s AND d.retracted_at IS NULL{live_filter}{facet_sql}
"""
    params: list[object] = [
        request.user_id,
        *words_params,
        *among_params,
        model.name,
        request.user_id,
        *([] if request.include_superseded else [request.user_id]),
        *([request.user_id, *request.facets.values()] if request.facets else []),
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    matches = []
    for (
        vector_id,
        deposit_id,
        bag_id,
        polarity,
        created_at,
        is_superseded,
        in_conflict,
        confident,
        words,
    ) in rows:
        similarity = close[vector_id]
        score = similarity * decay(_age_days(request.now, created_at), polarity)
        matches.append(
            MeaningMatch(
                Candidate(str(uuid.UUID(str(deposit_id))), bag_id, polarity, score, bool(in_conflict)),
                similarity,
                bool(confident),
                bool(is_superseded),
                None if words_bags is None else bool(words),
            )
        )
    return matches


def _age_days(now: datetime, created_at: datetime | str) -> float:
    """Days from a deposit's time to `now`; SQLite's raw cursor gives it as text or naive UTC."""
    if isinstance(created_at, str):
        created_at = parse_datetime(created_at) or now
    if created_at.tzinfo is None:
        created_at = created_at.replace(tzinfo=UTC)
    return max((now - created_at).total_seconds() / 86400.0, 0.0)

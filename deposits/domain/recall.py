"""Recall rules: query words, recency decay, the per-polarity slice, and explain()."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from deposits.domain.types import POLARITIES

HALF_LIFE_DAYS: dict[str, float] = {"positive": 14.0, "open": 14.0, "negative": 90.0, "cautionary": 90.0}
# Of `limit`: places reserved per polarity so a flood of one cannot hide the others.
RESERVED_SHARE: dict[str, float] = {"positive": 0.30, "negative": 0.30, "cautionary": 0.20, "open": 0.20}
MAX_LIMIT = 1000
# Words beyond this many add nothing a person meant and only slow the index scan.
MAX_QUERY_WORDS = 64
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


class EmptyQueryError(ValueError):
    """The query holds no searchable word."""


def query_words(text: str) -> list[str]:
    """The distinct lower-cased words of a query, in order: punctuation and operators are dropped.

    A query is words, never syntax: `a:b (c)* "d`, `NOT`, `-x` and `' OR 1=1 --` all become
    plain words that the backends OR together.
    """
    words = list(dict.fromkeys(word.lower() for word in _WORD.findall(text or "")))
    if not words:
        raise EmptyQueryError(
            "q holds no words to search for; send at least one word (letters or digits), e.g. q=threshold"
        )
    return words[:MAX_QUERY_WORDS]


def decay(age_days: float, polarity: str) -> float:
    """Recency decay exp(-age·ln2/half_life): a claim loses half its weight every half-life."""
    return math.exp(-max(age_days, 0.0) * math.log(2) / HALF_LIFE_DAYS[polarity])


def reserved_places(limit: int) -> dict[str, int]:
    """Places per polarity: its share of `limit`, rounded down, but at least one."""
    return {polarity: max(1, math.floor(share * limit)) for polarity, share in RESERVED_SHARE.items()}


@dataclass(frozen=True, slots=True)
class Candidate:
    """A matching deposit as the backend ranks it, before the slice."""

    id: str
    bag_id: str
    polarity: str
    score: float
    in_conflict: bool

    @property
    def order_key(self) -> tuple[bool, float, str]:
        # Conflict bags first, then by score; the id only makes ties deterministic.
        return (not self.in_conflict, -self.score, self.id)


def slice_hits(candidates: Sequence[Candidate], limit: int) -> list[Candidate]:
    """Pick `limit` hits: first each polarity's reserved places, then the best remaining.

    `candidates` must hold, for each polarity, at least its first `limit` in display order
    (conflict bags first, then score); each (conflict, polarity) class's best `limit` hold
    those. Nothing else can be picked: a polarity's picks are always its first candidates in
    that order, at most `limit` of them. The result is in display order.
    """
    ordered = sorted(candidates, key=lambda c: c.order_key)
    quota = reserved_places(limit)
    chosen: list[Candidate] = []
    taken = dict.fromkeys(POLARITIES, 0)
    picked: set[str] = set()
    for candidate in ordered:
        if len(chosen) == limit:
            break
        if taken[candidate.polarity] < quota[candidate.polarity]:
            taken[candidate.polarity] += 1
            chosen.append(candidate)
            picked.add(candidate.id)
    for candidate in ordered:
        if len(chosen) == limit:
            break
        if candidate.id not in picked:
            chosen.append(candidate)
            picked.add(candidate.id)
    return sorted(chosen, key=lambda c: c.order_key)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def explain_results(*, hit_count: int, bag_count: int, conflict_bag_count: int, is_confident: bool) -> str:
    """`"5 hits across 2 bags · 1 bag in conflict · not confident"`."""
    return " · ".join(
        [
            f"{_plural(hit_count, 'hit')} across {_plural(bag_count, 'bag')}",
            f"{_plural(conflict_bag_count, 'bag')} in conflict",
            "confident" if is_confident else "not confident",
        ]
    )

"""Scope bags: the grouping key, and the statistics a bag's live counts imply."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass, replace
from datetime import datetime

from deposits.domain.types import DIRECTIONAL, TEXT_FACETS, Scope

# The live rule belongs to the deposit (types.is_live); the bag rules below build on it.
from deposits.domain.types import is_live as is_live

MAX_CONFLICT_PEERS = 50
# The bag rules, each defined once here; the ORM (deposits.models) and SQL (deposits.sql.rules)
# forms are built from these constants and pinned to these functions by a property test.
#: A bag is in conflict when its live deposits hold at least this many directional polarities.
CONFLICT_MIN_KINDS = 2
#: A bag is thin evidence when it holds at most this many live directional deposits.
THIN_MAX_DIRECTIONAL = 1
# What bag_id() makes: a client-sent id of any other shape names no bag.
BAG_ID_PATTERN = re.compile(r"bag_[0-9a-f]{24}")


def compared(value: str | int | None) -> str | int | None:
    """A facet value as bags compare and group it: text in Unicode NFC, a number as it is.

    So "café" composed and decomposed are one bag; a deposit keeps its scope as sent.
    """
    return unicodedata.normalize("NFC", value) if isinstance(value, str) else value


def bag_scope(scope: Scope) -> Scope:
    """The scope as its bag holds it: the text facets compared (NFC); the note, no facet, as sent."""
    changed = {name: compared(getattr(scope, name)) for name in TEXT_FACETS}
    if all(changed[name] == getattr(scope, name) for name in TEXT_FACETS):
        return scope
    return replace(scope, **changed)


def bag_id(user_id: str, scope: Scope) -> str:
    """A stable id for (user_id, six facets).

    `note` is not part of the key, null equals null, and text facets are compared in NFC.
    """
    facets = [compared(value) for value in scope.facets]
    key = json.dumps([user_id, *facets], separators=(",", ":"), ensure_ascii=False)
    return "bag_" + hashlib.blake2b(key.encode("utf-8"), digest_size=12).hexdigest()


def is_directional(polarity: str) -> bool:
    """Positive, negative and cautionary claims take a side; open notes do not."""
    return polarity in DIRECTIONAL


def in_conflict(directional_kinds: int) -> bool:
    """Conflict: the bag's live deposits take two or more sides."""
    return directional_kinds >= CONFLICT_MIN_KINDS


def is_thin(directional_count: int) -> bool:
    return directional_count <= THIN_MAX_DIRECTIONAL


def is_confident(directional_kinds: int, directional_count: int) -> bool:
    """Confident: two or more live directional claims, all on one side."""
    return not in_conflict(directional_kinds) and not is_thin(directional_count)


def was_corrected(kept_directional_kinds: int, kept_superseded: int) -> bool:
    """Whether the bag was once split between sides and corrected: what the Resolution pillar counts.

    Superseded claims count towards the split, as domain.md's FMI says, whether or not the bag is
    still split.

    `kept` counts non-retracted deposits, superseded ones included.
    """
    return kept_directional_kinds >= CONFLICT_MIN_KINDS and kept_superseded > 0


def is_resolved(kept_directional_kinds: int, kept_superseded: int, directional_kinds: int) -> bool:
    """The bag's `resolved` flag: split once, corrected, and no longer in conflict.

    A bag corrected once but still taking two sides is in conflict, not resolved: the two flags
    never show at once.
    """
    return was_corrected(kept_directional_kinds, kept_superseded) and not in_conflict(directional_kinds)


@dataclass(frozen=True, slots=True)
class BagStats:
    """Live counts per polarity, with the newest live deposit's time per directional polarity."""

    positive: int = 0
    negative: int = 0
    cautionary: int = 0
    open: int = 0
    newest: tuple[datetime | None, datetime | None, datetime | None] = (None, None, None)

    def count(self, polarity: str) -> int:
        return getattr(self, polarity)

    @property
    def size(self) -> int:
        return self.positive + self.negative + self.cautionary + self.open

    @property
    def directional_count(self) -> int:
        return self.positive + self.negative + self.cautionary

    @property
    def dominant_polarity(self) -> str | None:
        """The directional polarity with most live deposits; a tie goes to the newest deposit."""
        candidates = [(self.count(p), self.newest[i], p) for i, p in enumerate(DIRECTIONAL) if self.count(p)]
        if not candidates:
            return None
        most = max(count for count, _, _ in candidates)
        tied = [(newest, polarity) for count, newest, polarity in candidates if count == most]
        # `newest` is missing only for rows written before it was tracked; order those last.
        return max(tied, key=lambda item: (item[0] is not None, item[0] or datetime.min))[1]

    @property
    def agreement_score(self) -> float:
        dominant = self.dominant_polarity
        return self.count(dominant) / self.directional_count if dominant else 0.0

    @property
    def directional_kinds(self) -> int:
        return sum(self.count(p) > 0 for p in DIRECTIONAL)

    @property
    def is_thin_evidence(self) -> bool:
        return is_thin(self.directional_count)

    @property
    def has_disagreement(self) -> bool:
        return in_conflict(self.directional_kinds)

    @property
    def is_confident(self) -> bool:
        return is_confident(self.directional_kinds, self.directional_count)


def peer_polarities(stats: BagStats, hit_polarity: str) -> tuple[str, ...]:
    """Polarities whose live deposits are a hit's conflict peers (open hits: all but dominant)."""
    if hit_polarity == "open":
        dominant = stats.dominant_polarity
        return tuple(p for p in DIRECTIONAL if p != dominant and stats.count(p))
    return tuple(p for p in DIRECTIONAL if p != hit_polarity and stats.count(p))


def explain_hit(stats: BagStats) -> str:
    """One sentence on why a hit is or is not confident."""
    if stats.has_disagreement:
        held = [f"{stats.count(p)} {p}" for p in DIRECTIONAL if stats.count(p)]
        return f"Not confident: its bag disagrees ({', '.join(held)})."
    if stats.directional_count == 0:
        return "Not confident: its bag holds only open notes, no directional claim."
    if stats.is_thin_evidence:
        return "Not confident: its bag holds a single directional claim (thin evidence)."
    dominant = stats.dominant_polarity
    return f"Confident: {stats.directional_count} live {dominant} claims agree in its bag and none disagree."

"""Calibration of belief probabilities: Brier score and expected calibration error (ECE)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

BINS = 10


@dataclass(frozen=True, slots=True)
class Scored:
    """One outcome: the top-1 probability the belief gave, and whether that value was confirmed."""

    probability: float
    correct: bool


def brier(outcomes: Sequence[Scored]) -> float | None:
    """Mean squared gap between the stated probability and what happened; 0 is perfect."""
    if not outcomes:
        return None
    return math.fsum((o.probability - o.correct) ** 2 for o in outcomes) / len(outcomes)


def ece(outcomes: Sequence[Scored], bins: int = BINS) -> float | None:
    """Expected calibration error over `bins` equal-width bins of top-1 probability."""
    if not outcomes:
        return None
    buckets: list[list[Scored]] = [[] for _ in range(bins)]
    for outcome in outcomes:
        buckets[min(int(outcome.probability * bins), bins - 1)].append(outcome)
    total = len(outcomes)
    return math.fsum(
        len(bucket)
        / total
        * abs(sum(o.correct for o in bucket) / len(bucket) - sum(o.probability for o in bucket) / len(bucket))
        for bucket in buckets
        if bucket
    )


@dataclass(frozen=True, slots=True)
class DiagramBin:
    """One bin of a reliability diagram: mean stated probability against observed frequency."""

    bin: int
    confidence: float
    frequency: float
    count: int


def reliability_diagram(outcomes: Sequence[Scored], bins: int = BINS) -> list[DiagramBin]:
    """Per non-empty bin: mean stated probability, observed frequency, count."""
    rows: list[DiagramBin] = []
    for index in range(bins):
        members = [o for o in outcomes if min(int(o.probability * bins), bins - 1) == index]
        if members:
            rows.append(
                DiagramBin(
                    bin=index,
                    confidence=sum(o.probability for o in members) / len(members),
                    frequency=sum(o.correct for o in members) / len(members),
                    count=len(members),
                )
            )
    return rows

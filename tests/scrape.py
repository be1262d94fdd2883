"""Reading /metrics as Prometheus does: prometheus_client's own parser, samples keyed by name and labels."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

Series = tuple[str, frozenset[tuple[str, str]]]


def samples(text: str) -> dict[Series, float]:
    """Every sample of an exposition, by its name and labels."""
    found: dict[Series, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def series(name: str, **labels: str) -> Series:
    return (name, frozenset(labels.items()))


def moved(before: dict[Series, float], after: dict[Series, float], name: str) -> dict[frozenset, float]:
    """How much each series of `name` moved between two scrapes (only those that moved)."""
    moves = {}
    for key, value in after.items():
        if key[0] == name:
            change = value - before.get(key, 0.0)
            if change:
                moves[key[1]] = change
    return moves

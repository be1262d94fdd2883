"""Each way PostgreSQL's recall can be planned, forced, so a test can hold every way to one answer."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

import deposits.search.postgres as postgres


def recall_plans(
    *, rare_full_matches: int, rare_shares: tuple[dict[str, float], float]
) -> dict[str, dict[str, Any]]:
    """The plans by name; "rare in full" needs a store's own idea of which words are rare."""
    return {
        # Every match scored in full (one top-N per class).
        "score all": {"SCORE_ALL_MATCHES": 10**9},
        # The planner's own choices, reading every match from the deposits: no conflict bag's
        # copies first (each plan below reads them first, wherever its polarity has any).
        "deposits alone": {"CONFLICTS_FIRST": False},
        # Every lexeme walked newest first, in small windows, each counted at the plain 0.1 (no
        # repeat statistics).
        "walk": {
            "SCORE_ALL_MATCHES": 0,
            "FULL_MATCHES": 0,
            "TIER_MATCHES": 0,
            "FIRST_WINDOW_DAYS": 0.5,
            "repeat_shares": lambda: None,
        },
        # The same walk counting each word held once (its repeaters scored in full).
        "tight walk": {
            "SCORE_ALL_MATCHES": 0,
            "FULL_MATCHES": 0,
            "TIER_MATCHES": 0,
            "FIRST_WINDOW_DAYS": 0.5,
            "repeat_shares": lambda: ({}, 0.0),
        },
        # The deposits holding two or more of the words scored in full, the rest walked, tightly.
        "tiers": {
            "SCORE_ALL_MATCHES": 0,
            "FULL_MATCHES": 0,
            "TIER_MATCHES": 10**9,
            "FIRST_WINDOW_DAYS": 0.5,
            "repeat_shares": lambda: ({}, 0.0),
        },
        # The rare words scored in full, the common ones walked.
        "rare in full": {
            "SCORE_ALL_MATCHES": 0,
            "FULL_MATCHES": rare_full_matches,
            "TIER_MATCHES": 0,
            "FIRST_WINDOW_DAYS": 0.5,
            "lexeme_shares": lambda: rare_shares,
        },
    }


@contextmanager
def forced(plan: Mapping[str, Any]) -> Iterator[None]:
    with ExitStack() as stack:
        for attribute, value in plan.items():
            stack.enter_context(mock.patch.object(postgres, attribute, value))
        yield

"""The review desk's rules in plain Python: a claim's time left, and a resolution's default words.

How a claim's remaining time is said, and what a resolution says holds when the reviewer does not
say it in their own words.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime

# How the kept deposits' contents are joined into the one claim that holds (static/js/resolve.js
# pre-fills the form's `holds` the same way).
CLAIM_JOINER = "\n"


def minutes_left(expires_at: datetime, now: datetime) -> int:
    """Whole minutes before a claim expires, rounded up: "1 min left" until it is gone."""
    return max(1, math.ceil((expires_at - now).total_seconds() / 60))


def held_message(reviewer: str, expires_at: datetime, now: datetime) -> str:
    """How the pages say that someone holds a conflict: "rita is on this · 7 min left"."""
    return f"{reviewer} is on this · {minutes_left(expires_at, now)} min left"


def claim_that_holds(contents: Iterable[str]) -> str:
    """What a resolution holds by default: the kept deposits' contents, each once, in order."""
    return CLAIM_JOINER.join(dict.fromkeys(text.strip() for text in contents if text.strip()))

"""The review desk's rules in plain Python: how a claim's remaining time is said."""

from __future__ import annotations

import math
from datetime import datetime


def minutes_left(expires_at: datetime, now: datetime) -> int:
    """Whole minutes before a claim expires, rounded up: "1 min left" until it is gone."""
    return max(1, math.ceil((expires_at - now).total_seconds() / 60))


def held_message(reviewer: str, expires_at: datetime, now: datetime) -> str:
    """How the pages say that someone holds a conflict: "rita is on this · 7 min left"."""
    return f"{reviewer} is on this · {minutes_left(expires_at, now)} min left"

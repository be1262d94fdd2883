"""Time as Atlaso writes it: ISO 8601 on the wire, short relative ages for people."""

from __future__ import annotations

from datetime import UTC, datetime


def isoformat(moment: datetime) -> str:
    """ISO 8601 in UTC with microseconds and offset, the one timestamp form on the wire."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def age(moment: datetime, now: datetime) -> str:
    """How long ago, in the largest whole unit: "just now", "5 min", "3 h", "12 d"."""
    seconds = max(0.0, (now - moment).total_seconds())
    if seconds < 60:
        return "just now"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit}"
    return "just now"

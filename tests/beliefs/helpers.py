"""Small calls the belief tests share: post an observation, read a verdict, claim times."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from tests.conftest import ApiClient

KEY = "coffee_ratio"
OLD = "4 oz per tbsp"
NEW = "5 oz per tbsp"
# The verdict fields an untrusted observation must never move (beliefs.md, guarantee 1).
VERDICT_FIELDS = ("fact", "probability", "distribution", "superseded", "contested", "is_uncertain")


def observe(
    client: ApiClient, value: str, *, user: str = "alice", key: str = KEY, **fields: Any
) -> dict[str, Any]:
    """POST one observation and return the revision; fails the test unless it is 201."""
    answer = client.post(f"/users/{user}/beliefs/{key}/observations", {"value": value, **fields})
    assert answer.status == 201, answer.body
    return answer.body


def verdict(client: ApiClient, *, user: str = "alice", key: str = KEY) -> dict[str, Any]:
    """GET the belief's verdict; fails the test unless it is 200."""
    answer = client.get(f"/users/{user}/beliefs/{key}")
    assert answer.status == 200, answer.body
    return answer.body


def claimed(minutes: float, *, base: datetime | None = None) -> str:
    """An ISO claim time `minutes` after `base` (default: a day ago, safely in the past)."""
    start = base or timezone.now() - timedelta(days=1)
    return (start + timedelta(minutes=minutes)).isoformat()


def verdict_fields(body: dict[str, Any]) -> dict[str, Any]:
    return pick(body, *VERDICT_FIELDS)


def pick(body: dict[str, Any], *names: str) -> dict[str, Any]:
    """The named fields of an answer, to compare several at once."""
    return {name: body[name] for name in names}

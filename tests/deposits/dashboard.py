"""Bags split between sides, for the dashboard's view and browser tests, written through the services."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.test import Client

from beliefs.services import channel_get_or_create
from deposits.domain.validation import validate_deposit
from deposits.models import Contradiction, Deposit
from deposits.services.deposits import deposit_add
from tests.cast import make_login
from tests.deposits.scenario import NARROW, clock

CHANNEL = "agent-a"
TIER = "agent_own"
XSS = ("<script>alert(1)</script>", "<img src=x onerror=alert(1)>")


@dataclass(frozen=True)
class Split:
    """A bag in conflict: its owner, id and the live deposits of each side, oldest first."""

    user_id: str
    bag_id: str
    positive: list[str]
    negative: list[str]

    @property
    def url(self) -> str:
        return f"/owners/{self.user_id}/bags/{self.bag_id}/"

    @property
    def resolve_url(self) -> str:
        return f"/conflicts/{self.user_id}/{self.bag_id}/resolve/"

    def deposit_url(self, deposit_id: str) -> str:
        return f"/owners/{self.user_id}/deposits/{deposit_id}/"


def write(
    user: str,
    polarity: str,
    content: str,
    scope: dict[str, Any] | None = None,
    *,
    at: datetime | None = None,
    **extra: Any,
) -> str:
    """One deposit on the agent-a channel (tier agent_own), past the gate: verified, with an artifact."""
    channel_get_or_create(name=CHANNEL, tier_name=TIER)
    data = {
        "content": content,
        "polarity": polarity,
        "evidence_grade": "verified",
        "artifact_refs": ["s3://runs/1"],
        "scope": dict(NARROW if scope is None else scope),
        "author": "agent-7",
        "author_role": "evaluator",
        "task_id": "task-42",
        **extra,
    }
    with clock(at):
        return deposit_add(draft=validate_deposit(user, data), channel=CHANNEL).id


def split(
    user: str = "alice",
    env: str = "prod",
    *,
    positives: int = 1,
    negatives: int = 1,
    at: datetime | None = None,
) -> Split:
    """A bag of `user` in conflict: `positives` claims that the threshold holds, `negatives` that it fails."""
    scope = {**NARROW, "env": env}
    positive = [
        write(user, "positive", f"threshold 0.7 holds in {env} (run {i})", scope, at=at)
        for i in range(positives)
    ]
    negative = [
        write(user, "negative", f"threshold 0.7 fails in {env} (run {i})", scope, at=at)
        for i in range(negatives)
    ]
    bag_id = Deposit.objects.get(pk=positive[0]).bag_id
    return Split(user, bag_id, positive, negative)


def logged_in(role: str) -> Client:
    client = Client()
    client.force_login(make_login(role))
    return client


def resolution_written() -> tuple[str, list[str]]:
    """The one resolution deposit written: its content and the reasons of its edges.

    Its content is what recall returns; its edges' reasons come one per deposit it superseded.
    """
    written = Deposit.objects.get(channel="human_review")
    edges = Contradiction.objects.filter(new_deposit=written).order_by("old_deposit_id")
    return written.content, list(edges.values_list("reason", flat=True))

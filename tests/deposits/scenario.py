"""Deposits written through the services, at a chosen time, for the recall, bag and peek tests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any
from unittest import mock

from django.utils import timezone

from deposits.domain.validation import validate_bulk, validate_correction, validate_deposit
from deposits.selectors.recall import SearchResult, SearchResults
from deposits.services.deposits import deposit_add, deposit_add_many, deposit_contradict, deposit_retract

NARROW = {"model": "gpt-5", "dataset": "evals", "env": "prod"}
BULK_BATCH = 1000


def claim(
    polarity: str, content: str, scope: Mapping[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    """A body the gate admits for any polarity and scope: verified evidence with an artifact."""
    return {
        "content": content,
        "polarity": polarity,
        "evidence_grade": "verified",
        "artifact_refs": ["s3://runs/1"],
        "scope": dict(NARROW if scope is None else scope),
        **extra,
    }


@contextmanager
def clock(moment: datetime | None) -> Iterator[None]:
    """Writes inside are stamped `moment`: the services take their time from timezone.now()."""
    if moment is None:
        yield
        return
    with mock.patch("deposits.services.deposits.timezone.now", return_value=moment):
        yield


def put(
    polarity: str,
    content: str,
    scope: Mapping[str, Any] | None = None,
    *,
    user: str = "alice",
    at: datetime | None = None,
    **extra: Any,
) -> str:
    with clock(at):
        return deposit_add(
            draft=validate_deposit(user, claim(polarity, content, scope, **extra)), channel=None
        ).id


def put_many(
    bodies: Sequence[Mapping[str, Any]], *, user: str = "alice", at: datetime | None = None
) -> list[str]:
    """Bulk writes in batches the API accepts; the ids come back in the order given."""
    ids: list[str] = []
    with clock(at):
        for start in range(0, len(bodies), BULK_BATCH):
            batch = [
                {**body, "idempotency_key": f"scenario-{uuid.uuid4()}"}
                for body in bodies[start : start + BULK_BATCH]
            ]
            result = deposit_add_many(bulk=validate_bulk(user, batch), channel=None)
            assert not result.failed, result.failed
            ids += [record.id for record in result.committed]
    return ids


def correct(
    ids: Sequence[str],
    content: str,
    *,
    polarity: str = "positive",
    user: str = "alice",
    at: datetime | None = None,
) -> str:
    """A contradicting deposit: it supersedes `ids` and lands in the first one's bag."""
    data = {
        "content": content,
        "contradicts": list(ids),
        "reason": "re-measured",
        "polarity": polarity,
        "evidence_grade": "verified",
        "artifact_refs": ["s3://runs/2"],
    }
    with clock(at):
        return deposit_contradict(correction=validate_correction(user, data), channel=None).id


def retract(deposit_id: str, *, user: str = "alice") -> None:
    deposit_retract(user_id=user, deposit_id=deposit_id, reason="measured wrong")


def by_id(results: SearchResults) -> dict[str, SearchResult]:
    return {hit.id: hit for hit in results}


def now() -> datetime:
    return timezone.now()

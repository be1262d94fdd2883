"""Health, peek and calibration in API v1."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from ninja import Query, Router, Schema, Status

from atlaso_site.access.api_keys import GLOBAL_ADMIN, READ, UNCONFINED_READ
from atlaso_site.wire import UserId, with_errors
from diagnostics import selectors
from diagnostics.schemas import (
    CalibrationOut,
    DaysQuery,
    DeploymentHealthOut,
    DiagnosticsOut,
    HealthHistoryOut,
    HealthQuery,
    PeekOut,
    PeekQuery,
)

router = Router(tags=["diagnostics"])


@router.get("/users/{user_id}/health", response=with_errors(**{"200": DiagnosticsOut}), auth=READ)
def health(request: HttpRequest, user_id: UserId, query: Query[HealthQuery]):
    """The owner's Field Maturity Index, its four pillars, and a one-line verdict."""
    return Status(200, selectors.health(user_id=user_id, window_days=query.window_days))


@router.get("/users/{user_id}/health/history", response=with_errors(**{"200": HealthHistoryOut}), auth=READ)
def health_history(request: HttpRequest, user_id: UserId, query: Query[DaysQuery]):
    """The owner's FMI snapshots over the last `days`, oldest first, and its conflict backlog now."""
    now = timezone.now()
    return _trend(
        HealthHistoryOut,
        {"user_id": user_id, "days": query.days},
        points=selectors.points_json(user_id, query.days, now),
        backlog=selectors.backlog(user_id=user_id, days=query.days, now=now),
    )


@router.get("/diagnostics", response=with_errors(**{"200": DeploymentHealthOut}), auth=GLOBAL_ADMIN)
def deployment_health(request: HttpRequest, query: Query[DaysQuery]):
    """The whole deployment: its health now, its snapshots over `days`, and the conflict backlog.

    Needs an admin key confined to no prefix: it pools every owner.
    """
    now = timezone.now()
    return _trend(
        DeploymentHealthOut,
        {"current": selectors.snapshot_of(None, selectors.field_totals_pooled(now=now), now)},
        points=selectors.points_json(None, query.days, now),
        backlog=selectors.backlog(days=query.days, now=now),
    )


def _trend(schema: type[Schema], fields: dict[str, Any], *, points: str, backlog: Any) -> HttpResponse:
    """A trend read's answer, its points joined from their stored wire form.

    The schema renders every field but the points, which come from Snapshot.point_json instead of
    validating thousands of objects.

    tests/diagnostics/test_api_history.py checks the answer against the schema's own rendering.
    """
    body = schema.model_validate({**fields, "points": [], "backlog": backlog}).model_dump(mode="json")
    text = ", ".join(
        f"{json.dumps(key)}: {points if key == 'points' else json.dumps(value)}"
        for key, value in body.items()
    )
    return HttpResponse("{" + text + "}", content_type="application/json; charset=utf-8")


@router.get("/users/{user_id}/peek", response=with_errors(**{"200": PeekOut}), auth=READ)
def peek(request: HttpRequest, user_id: UserId, query: Query[PeekQuery]):
    """A glance at an owner: newest live deposits, how many there are, FMI, recent conflict."""
    return Status(200, selectors.peek(user_id=user_id, limit=query.limit))


@router.get("/calibration", response=with_errors(**{"200": CalibrationOut}), auth=UNCONFINED_READ)
def calibration(request: HttpRequest):
    """How well belief probabilities match confirmed outcomes (Brier, ECE), overall and per tier.

    Until `is_frequency` is true there are too few outcomes: read probabilities as a ranking.
    Deployment-wide (it pools every owner's outcomes), so a key confined to a prefix gets 403.
    """
    return Status(200, selectors.calibration())

"""Health and peek in API v1."""

from __future__ import annotations

from typing import Literal

from django.http import HttpRequest
from ninja import Query, Router, Schema, Status
from pydantic import Field

from beliefs.access import require
from beliefs.errors import with_errors
from deposits.domain.validation import validate_user_id
from deposits.schemas import DepositOut
from diagnostics import selectors

router = Router(tags=["diagnostics"])


class DiagnosticsOut(Schema):
    kind: Literal["diagnostics"]
    fmi: int
    coverage: float
    precision: float
    resolution: float
    density: float
    window_days: int
    deposit_count: int
    explain: str


class PeekOut(Schema):
    kind: Literal["peek_view"]
    user_id: str
    deposits: list[DepositOut]
    total_count: int
    fmi: int
    has_recent_disagreements: bool


class HealthQuery(Schema):
    window_days: int = Field(30, ge=1, le=365)


class PeekQuery(Schema):
    limit: int = Field(10, ge=1, le=200)


@router.get("/users/{user_id}/health", response=with_errors(**{"200": DiagnosticsOut}))
def health(request: HttpRequest, user_id: str, query: Query[HealthQuery]):
    """The owner's Field Maturity Index, its four pillars, and a one-line verdict."""
    require(request, "read", user_id)
    validate_user_id(user_id)
    return Status(200, selectors.health(user_id=user_id, window_days=query.window_days).to_dict())


@router.get("/users/{user_id}/peek", response=with_errors(**{"200": PeekOut}))
def peek(request: HttpRequest, user_id: str, query: Query[PeekQuery]):
    """A glance at an owner: newest live deposits, how many there are, FMI, recent conflict."""
    require(request, "read", user_id)
    validate_user_id(user_id)
    return Status(200, selectors.peek(user_id=user_id, limit=query.limit))


class TierCalibrationOut(Schema):
    outcomes: int
    brier: float | None
    ece: float | None


class DiagramBinOut(Schema):
    bin: int
    confidence: float
    frequency: float
    count: int


class CalibrationOut(Schema):
    kind: Literal["calibration"]
    outcomes: int
    brier: float | None
    ece: float | None
    per_tier: dict[str, TierCalibrationOut]
    diagram: list[DiagramBinOut]
    is_frequency: bool


@router.get("/calibration", response=with_errors(**{"200": CalibrationOut}))
def calibration(request: HttpRequest):
    """How well belief probabilities match confirmed outcomes (Brier, ECE), overall and per tier.

    Until `is_frequency` is true there are too few outcomes: read probabilities as a ranking.
    """
    require(request, "read")
    return Status(200, selectors.calibration())

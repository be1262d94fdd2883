"""The HTTP shapes of the deposit API: explicit In and Out schemas."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from ninja import Schema
from pydantic import BaseModel, ConfigDict

from deposits.domain.types import FACETS

Polarity = Literal["positive", "negative", "cautionary", "open"]
EvidenceGrade = Literal["anecdotal", "observed", "replicated", "verified"]
ReproStatus = Literal["unreplicated", "replicated", "failed_repro"]


class FacetsIn(Schema):
    """The six facets of a scope: a bag's key, and recall's filter."""

    model: str | None = None
    dataset: str | None = None
    env: str | None = None
    version: str | None = None
    n: int | None = None
    seed: int | None = None

    def facets(self) -> dict[str, str | int | None]:
        return {name: getattr(self, name) for name in FACETS}


class ScopeIn(FacetsIn):
    model_config = ConfigDict(extra="forbid")

    note: str | None = None


class BeliefIn(Schema):
    model_config = ConfigDict(extra="forbid")

    key: str
    value: str
    content_confidence: float | None = None
    taint_tier: str | None = None
    observed_at: datetime | None = None


class DepositFields(Schema):
    model_config = ConfigDict(extra="forbid")

    content: str
    polarity: Polarity = "open"
    evidence_grade: EvidenceGrade = "anecdotal"
    scope: ScopeIn | None = None
    tags: list[str] = []
    artifact_refs: list[str] = []
    contradicts: list[str] = []
    author: str | None = None
    author_role: str | None = None
    task_id: str | None = None
    repro_status: ReproStatus = "unreplicated"
    belief: BeliefIn | None = None


class DepositIn(DepositFields):
    idempotency_key: str | None = None


class BulkItemIn(DepositFields):
    idempotency_key: str


class BulkIn(Schema):
    model_config = ConfigDict(extra="forbid")

    items: list[BulkItemIn]
    on_gate_reject: Literal["skip", "abort"] = "skip"


class ContradictIn(DepositFields):
    contradicts: list[str]
    reason: str
    idempotency_key: str | None = None


class ScopeOut(Schema):
    model: str | None
    dataset: str | None
    env: str | None
    version: str | None
    n: int | None
    seed: int | None
    note: str | None


class BeliefRefOut(Schema):
    key: str
    value: str


class DepositOut(Schema):
    kind: Literal["deposit"]
    id: str
    content: str
    polarity: Polarity
    evidence_grade: EvidenceGrade
    scope: ScopeOut
    user_id: str
    tags: list[str]
    contradicts: list[str]
    artifact_refs: list[str]
    created_at: str
    author: str | None
    author_role: str | None
    repro_status: ReproStatus
    task_id: str | None
    channel: str | None
    belief: BeliefRefOut | None


class DepositDetailOut(DepositOut):
    superseded_by: list[str]
    retracted: bool
    retracted_reason: str | None


class AddResultOut(Schema):
    kind: Literal["add_result"]
    deposit: DepositOut
    is_idempotent_replay: bool


class BulkFailureError(BaseModel):
    """The error envelope's inner object; a plain model, so its details (gate_reason …) pass through.

    A ninja `Schema` reads its input by attribute, which drops undeclared keys even with extra="allow".
    """

    model_config = ConfigDict(extra="allow")

    code: str
    message: str


class BulkFailureOut(Schema):
    index: int
    item: dict
    error: BulkFailureError


class AddManyResultOut(Schema):
    kind: Literal["add_many_result"]
    committed: list[DepositOut]
    duplicates: list[DepositOut]
    failed: list[BulkFailureOut]
    is_partial: bool
    total: int
    all_succeeded: bool


class DepositPageOut(Schema):
    kind: Literal["deposit_page"]
    items: list[DepositDetailOut]
    total: int
    limit: int
    offset: int


class RetractResultOut(Schema):
    kind: Literal["retract_result"]
    deposit_id: str
    mode: Literal["soft", "hard"]
    contradicts_preserved: list[str]

"""The HTTP shapes of the deposit API: explicit In and Out schemas."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Schema
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from atlaso_site.lib.errors import AtlasoError
from atlaso_site.lib.paging import MAX_OFFSET
from atlaso_site.lib.wire import (
    DepositDetailOut,
    DepositOut,
    EvidenceGrade,
    OutSchema,
    Polarity,
    ReproStatus,
    ScopeOut,
    VerdictOut,
    WireTime,
)
from deposits.domain.recall import MAX_LIMIT
from deposits.domain.types import FACETS


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


class AddResultOut(OutSchema):
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


def _error_object(error: Any) -> Any:
    """The envelope's inner object for a neutral error: code, message, then its details."""
    if isinstance(error, AtlasoError):
        return {"code": error.code, "message": error.message, **error.details}
    return error


class BulkFailureOut(Schema):
    index: int
    item: Annotated[dict, BeforeValidator(dict)]
    error: Annotated[BulkFailureError, BeforeValidator(_error_object)]


class AddManyResultOut(OutSchema):
    kind: Literal["add_many_result"]
    committed: list[DepositOut]
    duplicates: list[DepositOut]
    failed: list[BulkFailureOut]
    is_partial: bool
    total: int
    all_succeeded: bool


class DepositPageOut(OutSchema):
    kind: Literal["deposit_page"]
    items: list[DepositDetailOut]
    total: int
    limit: int
    offset: int


class RetractResultOut(OutSchema):
    kind: Literal["retract_result"]
    deposit_id: str
    mode: Literal["soft", "hard"]
    contradicts_preserved: list[str]


class ListQuery(Schema):
    limit: int = Field(50, ge=1, le=200)
    offset: int = Field(0, ge=0, le=MAX_OFFSET)
    include_retracted: bool = False


class RetractQuery(Schema):
    mode: Literal["soft", "hard"] = "soft"
    reason: str | None = Field(None, max_length=2000)


class RecallQuery(FacetsIn):
    q: str = Field(..., max_length=10000)
    limit: int = Field(10, ge=1, le=MAX_LIMIT)
    include_superseded: bool = False


class BeliefOnHitOut(VerdictOut):
    value: str
    value_probability: float
    asserted: bool


class SearchResultOut(OutSchema):
    kind: Literal["search_result"]
    id: str
    content: str
    polarity: Polarity
    evidence_grade: EvidenceGrade
    scope: ScopeOut
    tags: list[str]
    created_at: WireTime
    score: float
    is_confident: bool
    has_disagreement: bool
    agreement_score: float
    is_thin_evidence: bool
    conflict_peers: list[str]
    bag_id: str
    superseded: bool
    explain: str
    belief: BeliefOnHitOut | None
    deposit: DepositOut


class SearchResultsOut(OutSchema):
    kind: Literal["search_results"]
    items: list[SearchResultOut]
    has_disagreement: bool
    is_confident: bool
    bag_count: int
    conflict_bag_count: int
    explain: str


class CountsOut(Schema):
    positive: int
    negative: int
    cautionary: int
    open: int


class BagScopeOut(Schema):
    model: str | None
    dataset: str | None
    env: str | None
    version: str | None
    n: int | None
    seed: int | None


class BagOut(OutSchema):
    kind: Literal["bag"]
    bag_id: str
    user_id: str
    scope: BagScopeOut
    size: int
    counts: CountsOut
    dominant_polarity: Polarity | None
    agreement_score: float
    has_disagreement: bool
    is_thin_evidence: bool
    is_confident: bool
    resolved: bool
    updated_at: WireTime


class BagDepositOut(DepositDetailOut):
    state: Literal["live", "superseded"]


class BagDetailOut(BagOut):
    deposits: list[BagDepositOut]


class BagPageOut(OutSchema):
    kind: Literal["bag_page"]
    items: list[BagOut]
    total: int


class BagQuery(FacetsIn):
    conflict: bool | None = None
    limit: int = Field(50, ge=1, le=500)
    offset: int = Field(0, ge=0, le=MAX_OFFSET)

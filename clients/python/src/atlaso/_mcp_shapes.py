"""The MCP tools' input and output shapes: the HTTP API's wire objects, as TypedDicts.

The tools return the same `to_dict()` forms the client's result types write, so these describe
what a model receives as structured content, and the SDK checks each answer against them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, with_config
from typing_extensions import NotRequired, TypedDict

from atlaso._types import EvidenceGrade, MatchedBy, Polarity, RetractMode


# A misspelt facet ("environment") must fail the call, not vanish and store an unscoped claim.
@with_config(ConfigDict(extra="forbid"))
class ScopeIn(TypedDict, total=False):
    """Where a claim holds. Two or more of the six facets make it narrow; note is searchable text."""

    model: str
    dataset: str
    env: str
    version: str
    n: int
    seed: int
    note: str


@with_config(ConfigDict(extra="forbid"))
class ScopeFilterIn(TypedDict, total=False):
    """Only claims whose facets equal these; facets left out are not compared."""

    model: str
    dataset: str
    env: str
    version: str
    n: int
    seed: int


@with_config(ConfigDict(extra="forbid"))
class BulkItemIn(TypedDict):
    """One claim of a bulk import; idempotency_key is required so a retried batch lands once."""

    content: str
    idempotency_key: str
    polarity: NotRequired[Polarity]
    evidence_grade: NotRequired[EvidenceGrade]
    scope: NotRequired[ScopeIn]
    tags: NotRequired[list[str]]
    contradicts: NotRequired[list[str]]
    artifact_refs: NotRequired[list[str]]
    author: NotRequired[str]
    author_role: NotRequired[str]
    task_id: NotRequired[str]
    belief: NotRequired[dict[str, Any]]


class ScopeOut(TypedDict):
    model: str | None
    dataset: str | None
    env: str | None
    version: str | None
    n: int | None
    seed: int | None
    note: str | None


class BeliefRefOut(TypedDict):
    key: str
    value: str


class DepositOut(TypedDict):
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
    repro_status: str
    task_id: str | None
    channel: str | None
    belief: BeliefRefOut | None
    superseded_by: NotRequired[list[str]]
    retracted: NotRequired[bool]
    retracted_reason: NotRequired[str | None]
    state: NotRequired[str]


class AddResultOut(TypedDict):
    kind: Literal["add_result"]
    deposit: DepositOut
    is_idempotent_replay: bool


class HitBeliefOut(TypedDict):
    kind: str
    belief_key: str
    fact: str | None
    probability: float
    value: str
    value_probability: float
    asserted: bool
    is_uncertain: bool


class SearchResultOut(TypedDict):
    """One recall hit, its deposit written once: the claim, who wrote it, and its bag's flags."""

    kind: Literal["search_result"]
    id: str
    content: str
    polarity: Polarity
    evidence_grade: EvidenceGrade
    scope: ScopeOut
    tags: list[str]
    created_at: str
    score: float
    is_confident: bool
    has_disagreement: bool
    agreement_score: float
    is_thin_evidence: bool
    conflict_peers: list[str]
    bag_id: str
    superseded: bool
    explain: str
    belief: HitBeliefOut | None
    matched_by: MatchedBy
    author: str | None
    author_role: str | None
    channel: str | None
    artifact_refs: list[str]
    contradicts: list[str]


class SearchResultsOut(TypedDict):
    kind: Literal["search_results"]
    items: list[SearchResultOut]
    has_disagreement: bool
    is_confident: bool
    bag_count: int
    conflict_bag_count: int
    explain: str


class DepositPageOut(TypedDict):
    kind: Literal["deposit_page"]
    items: list[DepositOut]
    total: int
    limit: int
    offset: int


class RetractResultOut(TypedDict):
    kind: Literal["retract_result"]
    deposit_id: str
    mode: RetractMode
    contradicts_preserved: list[str]


class DiagnosticsOut(TypedDict):
    kind: Literal["diagnostics"]
    fmi: int
    coverage: float
    precision: float
    resolution: float
    density: float
    window_days: int
    deposit_count: int
    explain: str


class PeekOut(TypedDict):
    kind: Literal["peek_view"]
    user_id: str
    deposits: list[DepositOut]
    total_count: int
    fmi: int
    has_recent_disagreements: bool


class BulkErrorOut(TypedDict):
    code: str
    message: str


class BulkRejectOut(TypedDict):
    index: int
    item: dict[str, object]
    error: BulkErrorOut


class AddManyResultOut(TypedDict):
    kind: Literal["add_many_result"]
    committed: list[DepositOut]
    duplicates: list[DepositOut]
    failed: list[BulkRejectOut]
    is_partial: bool
    total: int
    all_succeeded: bool


class ClaimOut(TypedDict):
    id: str
    content: str
    evidence_grade: EvidenceGrade
    created_at: str
    author: str | None


class ConflictOut(TypedDict):
    bag_id: str
    resolved: bool
    scope: ScopeOut
    counts: dict[str, int]
    positive: list[ClaimOut]
    negative: list[ClaimOut]
    cautionary: list[ClaimOut]
    resolve_url: str


class ConflictsOut(TypedDict):
    kind: Literal["conflicts"]
    user_id: str
    total: int
    items: list[ConflictOut]


class SettleOut(TypedDict):
    """What settle did: the person's choice and the correction it wrote, or why nothing was."""

    kind: Literal["settle_result"]
    action: Literal["accepted", "declined", "cancelled", "not_asked"]
    user_id: str
    bag_id: str
    resolve_url: str
    holds: Literal["positive", "negative", "cautionary"] | None
    reason: str | None
    correction: AddResultOut | None

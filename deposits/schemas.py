"""The HTTP shapes of the deposit API: explicit In and Out schemas."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from ninja import Schema
from pydantic import BaseModel, BeforeValidator, ConfigDict, FailFast, Field

from atlaso_site.lib.errors import AtlasoError
from atlaso_site.lib.paging import MAX_OFFSET
from atlaso_site.wire import (
    NO_NUL,
    NOT_BLANK,
    BagScopeOut,
    DepositDetailOut,
    DepositOut,
    EvidenceGrade,
    IdempotencyKey,
    OutSchema,
    Polarity,
    ReproStatus,
    ScopeOut,
    TierName,
    TimeIn,
    UnitInterval,
    VerdictOut,
    WireTime,
    checked_per_item,
    stated_integer,
    stated_text,
    stripped_within,
)
from beliefs.domain.values import BELIEF_KEY_PATTERN, MAX_VALUE_LENGTH
from deposits.domain.bags import BAG_ID_PATTERN
from deposits.domain.recall import MAX_LIMIT
from deposits.domain.types import FACETS
from deposits.domain.validation import (
    INT_FACET_RANGE,
    MAX_ARTIFACT,
    MAX_BULK_ITEMS,
    MAX_CONTENT,
    MAX_CONTRADICTS,
    MAX_FACET,
    MAX_LIST,
    MAX_NOTE,
    MAX_PROVENANCE,
    MAX_REASON,
    MAX_TAG,
)

# Body fields: the schema states each rule of deposits.domain.validation, which checks it.
# validate_deposit allows a `contradicts` entry (a deposit id) up to 64 characters.
MAX_DEPOSIT_REF = 64
FacetText = stated_text(min_length=1, max_length=MAX_FACET)
FacetNumber = stated_integer(*INT_FACET_RANGE)
FacetQueryNumber = stated_integer(*INT_FACET_RANGE, in_query=True)
# Text in a query: anything but NUL (which the API refuses in every string).
QueryText = stated_text()
Note = stated_text(max_length=MAX_NOTE)
Tag = stated_text(min_length=1, max_length=MAX_TAG)
ArtifactRef = stated_text(min_length=1, max_length=MAX_ARTIFACT)
DepositRef = stated_text(min_length=1, max_length=MAX_DEPOSIT_REF)
ProvenanceText = stated_text(max_length=MAX_PROVENANCE)
Content = stated_text(
    pattern=stripped_within(MAX_CONTENT),
    description=f"The claim: 1..{MAX_CONTENT} characters once leading and trailing whitespace is stripped. "
    "Text made only of whitespace and invisible characters (by Unicode's properties: default-ignorable "
    "and format characters such as zero-width spaces and joiners, the BOM and the soft hyphen; the Hangul "
    "fillers; the blank braille pattern) is empty.",
)
Reason = stated_text(
    pattern=stripped_within(MAX_REASON),
    description=f"Why the earlier deposits no longer hold: 1..{MAX_REASON} characters once stripped, "
    "not only whitespace and invisible characters.",
)
BeliefKey = stated_text(pattern=f"^{BELIEF_KEY_PATTERN.pattern}$")
# A belief value is at most 500 characters as sent (pydantic checks that); the domain checks the
# rest (not blank) and would otherwise count them with whitespace collapsed, which no schema says.
BeliefValue = Annotated[str, Field(max_length=MAX_VALUE_LENGTH, json_schema_extra={"pattern": NOT_BLANK})]


# A bag id in a path: one of another shape names no bag (404).
BagId = stated_text(pattern=f"^{BAG_ID_PATTERN.pattern}$")
# Recall's modes and which ranking found a hit (deposits.domain.meaning; tests/test_enum_owners.py).
RecallMode = Literal["words", "meaning", "hybrid"]
MatchedBy = Literal["words", "meaning", "both"]


class FacetsIn(Schema):
    """The six facets of a scope as query parameters, for the bag list's filter and recall's.

    The bag list may ask for any value (one that no bag can hold matches nothing); recall reads them
    through RecallQuery.
    """

    model: QueryText | None = None
    dataset: QueryText | None = None
    env: QueryText | None = None
    version: QueryText | None = None
    n: int | None = None
    seed: int | None = None

    def facets(self) -> dict[str, str | int | None]:
        return {name: getattr(self, name) for name in FACETS}


class ScopeIn(Schema):
    """A deposit's scope: the six facets (its bag's key) and a free-text note."""

    model_config = ConfigDict(extra="forbid")

    model: FacetText | None = None
    dataset: FacetText | None = None
    env: FacetText | None = None
    version: FacetText | None = None
    n: FacetNumber | None = None
    seed: FacetNumber | None = None
    note: Note | None = None


class BeliefIn(Schema):
    model_config = ConfigDict(extra="forbid")

    key: BeliefKey
    value: BeliefValue
    content_confidence: UnitInterval | None = None
    taint_tier: TierName | None = None
    observed_at: TimeIn | None = None


class DepositFields(Schema):
    model_config = ConfigDict(extra="forbid")

    content: Content
    polarity: Polarity = "open"
    evidence_grade: EvidenceGrade = "anecdotal"
    scope: ScopeIn | None = None
    tags: Annotated[list[Tag], FailFast()] = Field([], json_schema_extra={"maxItems": MAX_LIST})
    artifact_refs: Annotated[list[ArtifactRef], FailFast()] = Field(
        [], json_schema_extra={"maxItems": MAX_LIST}
    )
    contradicts: Annotated[list[DepositRef], FailFast()] = Field(
        [], json_schema_extra={"maxItems": MAX_CONTRADICTS}
    )
    author: ProvenanceText | None = None
    author_role: ProvenanceText | None = None
    task_id: ProvenanceText | None = None
    repro_status: ReproStatus = "unreplicated"
    belief: BeliefIn | None = None


class DepositIn(DepositFields):
    idempotency_key: IdempotencyKey | None = None


# A bulk item is judged alone: its value rules are stated as prose (see `checked_per_item`).
class BulkScopeIn(ScopeIn):
    model_config = ConfigDict(extra="forbid", json_schema_extra=checked_per_item)


class BulkBeliefIn(BeliefIn):
    model_config = ConfigDict(extra="forbid", json_schema_extra=checked_per_item)

    value: str


class BulkItemIn(DepositFields):
    model_config = ConfigDict(extra="forbid", json_schema_extra=checked_per_item)

    scope: BulkScopeIn | None = None
    belief: BulkBeliefIn | None = None
    idempotency_key: IdempotencyKey


class BulkIn(Schema):
    model_config = ConfigDict(extra="forbid")

    items: Annotated[list[BulkItemIn], FailFast()] = Field(json_schema_extra={"maxItems": MAX_BULK_ITEMS})
    on_gate_reject: Literal["skip", "abort"] = "skip"


class ContradictIn(DepositFields):
    contradicts: Annotated[list[DepositRef], FailFast()] = Field(
        json_schema_extra={"minItems": 1, "maxItems": MAX_CONTRADICTS}
    )
    reason: Reason
    idempotency_key: IdempotencyKey | None = None


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


# A recall query's length in characters: more than its 64 words need, and (as ASCII) inside the
# 7 KiB the API reads of a query string (atlaso_site.middleware) with room for the facets.
MAX_QUERY_TEXT = 5000


class RetractQuery(Schema):
    mode: Literal["soft", "hard"] = "soft"
    reason: str | None = Field(None, max_length=MAX_REASON, pattern=NO_NUL)


class RecallQuery(FacetsIn):
    # Recall checks its facets as a scope's (validate_scope), so they state a scope's rules.
    model: FacetText | None = None
    dataset: FacetText | None = None
    env: FacetText | None = None
    version: FacetText | None = None
    n: FacetQueryNumber | None = None
    seed: FacetQueryNumber | None = None
    q: str = Field(
        ...,
        max_length=MAX_QUERY_TEXT,
        pattern=NO_NUL,
        description="Words to search for: at least one letter or digit (of any script); punctuation "
        "and operators are read as spaces. The whole query string may be at most 7 KiB as sent.",
    )
    limit: int = Field(10, ge=1, le=MAX_LIMIT)
    include_superseded: bool = False
    mode: RecallMode | None = Field(
        None,
        description="How to find the deposits: `words` (full text, as recall has always searched), "
        "`meaning` (by embeddings: a query that shares no word with a claim still finds it), or "
        "`hybrid` (both rankings fused by reciprocal rank). Default: `hybrid` when the server has an "
        "embedder and the owner has vectors, else `words`. `meaning` or `hybrid` on a server with no "
        "embedder answers 422 `embedder_unavailable`; with an embedder that fails, recall falls back "
        "to words and `explain` says so.",
    )


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
    matched_by: MatchedBy = Field(description="Which ranking found the hit: `words`, `meaning` or `both`.")
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

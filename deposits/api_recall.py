"""Recall and scope bags in API v1."""

from __future__ import annotations

from typing import Literal

from django.http import HttpRequest
from ninja import Query, Router, Schema, Status
from pydantic import Field

from beliefs.access import require
from beliefs.api import MAX_OFFSET, VerdictOut
from beliefs.errors import with_errors
from deposits import bags
from deposits.domain.recall import MAX_LIMIT
from deposits.recall import recall
from deposits.schemas import DepositDetailOut, DepositOut, EvidenceGrade, FacetsIn, Polarity, ScopeOut

router = Router(tags=["recall"])


class RecallQuery(FacetsIn):
    q: str = Field(..., max_length=10000)
    limit: int = Field(10, ge=1, le=MAX_LIMIT)
    include_superseded: bool = False


class BeliefOnHitOut(VerdictOut):
    value: str
    value_probability: float
    asserted: bool


class SearchResultOut(Schema):
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
    belief: BeliefOnHitOut | None
    deposit: DepositOut


class SearchResultsOut(Schema):
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


class BagOut(Schema):
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
    updated_at: str


class BagDepositOut(DepositDetailOut):
    state: Literal["live", "superseded"]


class BagDetailOut(BagOut):
    deposits: list[BagDepositOut]


class BagPageOut(Schema):
    kind: Literal["bag_page"]
    items: list[BagOut]
    total: int


class BagQuery(FacetsIn):
    conflict: bool | None = None
    limit: int = Field(50, ge=1, le=500)
    offset: int = Field(0, ge=0, le=MAX_OFFSET)


@router.get("/users/{user_id}/recall", response=with_errors(**{"200": SearchResultsOut}))
def recall_deposits(request: HttpRequest, user_id: str, query: Query[RecallQuery]):
    """Search an owner's memory: hits with their bag's flags, and flags over every matching bag."""
    require(request, "read", user_id)
    results = recall(
        user_id=user_id,
        query=query.q,
        facets=query.facets(),
        limit=query.limit,
        include_superseded=query.include_superseded,
    )
    return Status(200, results.to_dict())


@router.get("/users/{user_id}/bags", response=with_errors(**{"200": BagPageOut}))
def list_bags(request: HttpRequest, user_id: str, query: Query[BagQuery]):
    """An owner's scope bags with live statistics; `conflict=true` lists only disagreeing ones."""
    require(request, "read", user_id)
    page = bags.bag_page(
        user_id=user_id,
        conflict=query.conflict,
        facets=query.facets(),
        limit=query.limit,
        offset=query.offset,
    )
    return Status(200, page.to_dict())


@router.get("/users/{user_id}/bags/{bag_id}", response=with_errors(404, **{"200": BagDetailOut}))
def get_bag(request: HttpRequest, user_id: str, bag_id: str):
    """One bag with its deposits, live and superseded, marked."""
    require(request, "read", user_id)
    return Status(200, bags.bag_detail(user_id=user_id, bag_id=bag_id))

"""Beliefs and provenance in API v1."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from django.http import HttpRequest
from ninja import Query, Router, Schema, Status
from pydantic import ConfigDict, Field

from beliefs import selectors, services
from beliefs.access import require
from beliefs.errors import ApiError, with_errors
from beliefs.models import Channel

router = Router(tags=["beliefs"])
# The largest offset any page accepts: beyond it both databases overflow their integers.
MAX_OFFSET = 2**31 - 1


class ObservationIn(Schema):
    model_config = ConfigDict(extra="forbid")

    value: str
    observed_at: datetime | None = None
    content_confidence: float | None = None
    taint_tier: str | None = None
    source_id: str | None = None


class VerdictOut(Schema):
    kind: Literal["belief_verdict"]
    belief_key: str
    fact: str | None
    probability: float
    distribution: dict[str, float]
    unknown_mass: float
    superseded: list[str]
    contested: list[str]
    inert: list[str]
    entropy_bits: float
    is_uncertain: bool
    observation_count: int
    effective_count: int
    updated_at: str | None


class RevisionOut(Schema):
    kind: Literal["belief_revision"]
    belief_key: str
    value: str
    observed_at: str
    sequence: int
    channel: str
    tier: str
    ceiling: float
    taint_tier: str | None
    content_confidence: float | None
    reliability: float
    likelihood_ratio: float
    floor: float
    lifted: bool
    effective: bool
    prior: float
    posterior: float
    shift: float
    deposit_id: str | None
    source_id: str | None


class RevisionWithVerdictOut(RevisionOut):
    verdict: VerdictOut


class BeliefPageOut(Schema):
    kind: Literal["belief_page"]
    items: list[VerdictOut]
    total: int


class RevisionPageOut(Schema):
    kind: Literal["revision_page"]
    items: list[RevisionWithVerdictOut]
    total: int
    limit: int
    offset: int


class TierOut(Schema):
    name: str
    ceiling: float
    description: str
    channels: list[str]


class TierListOut(Schema):
    kind: Literal["tier_list"]
    items: list[TierOut]


class TierIn(Schema):
    model_config = ConfigDict(extra="forbid")

    ceiling: float | None = Field(None, gt=0, lt=1)
    description: str | None = Field(None, max_length=500)


class ChannelIn(Schema):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")
    tier: str
    description: str | None = Field(None, max_length=500)


class RebuildOut(Schema):
    id: int
    status: str
    total: int
    done: int


class TierChangeOut(TierOut):
    kind: Literal["tier"]
    rebuild: RebuildOut | None


class ChannelOut(Schema):
    kind: Literal["channel"]
    name: str
    tier: str
    rebuild: RebuildOut | None


class PageQuery(Schema):
    limit: int = Field(50, ge=1, le=200)
    offset: int = Field(0, ge=0, le=MAX_OFFSET)


class BeliefPageQuery(PageQuery):
    uncertain: bool | None = None


@router.post(
    "/users/{user_id}/beliefs/{key}/observations", response=with_errors(**{"201": RevisionWithVerdictOut})
)
def post_observation(request: HttpRequest, user_id: str, key: str, payload: ObservationIn):
    """Record one observation on the key's channel; its tier comes from the API key, never the body."""
    api_key = require(request, "write", user_id)
    recorded = services.observation_record(
        user_id=user_id,
        key=key,
        value=payload.value,
        channel=api_key.channel,
        observed_at=payload.observed_at,
        content_confidence=payload.content_confidence,
        taint_tier=payload.taint_tier,
        source_id=payload.source_id,
    )
    return Status(201, selectors.revision_to_dict(recorded.revision, recorded.verdict))


@router.get("/users/{user_id}/beliefs", response=with_errors(**{"200": BeliefPageOut}))
def list_beliefs(request: HttpRequest, user_id: str, query: Query[BeliefPageQuery]):
    """An owner's beliefs; `uncertain=true` lists those the memory should ask about, not assert."""
    require(request, "read", user_id)
    return Status(
        200,
        selectors.belief_page(
            user_id=user_id, uncertain=query.uncertain, limit=query.limit, offset=query.offset
        ),
    )


@router.get("/users/{user_id}/beliefs/{key}", response=with_errors(404, **{"200": VerdictOut}))
def get_belief(request: HttpRequest, user_id: str, key: str):
    """What the memory asserts for this key, how sure it is, and what it set aside."""
    require(request, "read", user_id)
    return Status(200, selectors.belief_verdict(user_id=user_id, key=key).to_dict())


@router.get("/users/{user_id}/beliefs/{key}/revisions", response=with_errors(404, **{"200": RevisionPageOut}))
def list_revisions(request: HttpRequest, user_id: str, key: str, query: Query[PageQuery]):
    """The key's revision log in the order it is folded (claim time, then arrival)."""
    require(request, "read", user_id)
    return Status(
        200, selectors.revision_page(user_id=user_id, key=key, limit=query.limit, offset=query.offset)
    )


@router.get("/tiers", response=with_errors(**{"200": TierListOut}))
def list_tiers(request: HttpRequest):
    """The provenance tiers, their ceilings and the channels bound to each."""
    require(request, "read")
    return Status(200, selectors.tier_list())


def _rebuild(job) -> dict | None:
    return None if job is None else {"id": job.pk, "status": job.status, "total": job.total, "done": job.done}


@router.put("/tiers/{name}", response=with_errors(404, **{"200": TierChangeOut}))
def put_tier(request: HttpRequest, name: str, payload: TierIn):
    """Change a tier's ceiling (admin); beliefs its channels touched are rebuilt by a job."""
    require(request, "admin")
    try:
        tier, job = services.tier_update(name=name, ceiling=payload.ceiling, description=payload.description)
    except services.ProvenanceError as error:
        raise ApiError("not_found", str(error)) from error
    return Status(200, {"kind": "tier", **selectors.tier_to_dict(tier), "rebuild": _rebuild(job)})


@router.post("/channels", response=with_errors(**{"200": ChannelOut, "201": ChannelOut}))
def post_channel(request: HttpRequest, payload: ChannelIn):
    """Create a channel on a tier, or rebind one (admin); a rebind rebuilds what it touched."""
    require(request, "admin")
    existed = Channel.objects.filter(name=payload.name).exists()
    try:
        channel, job = services.channel_bind(
            name=payload.name, tier_name=payload.tier, description=payload.description
        )
    except services.ProvenanceError as error:
        raise ApiError("validation_error", str(error), field="tier") from error
    body = {"kind": "channel", "name": channel.name, "tier": channel.tier.name, "rebuild": _rebuild(job)}
    return Status(200 if existed else 201, body)

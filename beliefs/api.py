"""Beliefs and provenance in API v1."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Query, Router, Status

from atlaso_site.access.api_keys import ANY_OWNER_READ, GLOBAL_ADMIN, READ, WRITE, key_of
from atlaso_site.access.models import Channel
from atlaso_site.lib.idempotency import sent_idempotency_key
from atlaso_site.wire import IDEMPOTENCY_HEADER, IdempotencyKey, PageQuery, UserId, VerdictOut, with_errors
from beliefs import selectors, services
from beliefs.schemas import (
    ApiKeyOut,
    BeliefKey,
    BeliefPageOut,
    BeliefPageQuery,
    ChannelIn,
    ChannelOut,
    ObservationIn,
    ObservationResultOut,
    RevisionPageOut,
    TierChangeOut,
    TierIn,
    TierListOut,
    TierName,
)

router = Router(tags=["beliefs"])


@router.post(
    "/users/{user_id}/beliefs/{key}/observations",
    response=with_errors(409, 410, 411, **{"201": ObservationResultOut, "200": ObservationResultOut}),
    auth=WRITE,
)
def post_observation(
    request: HttpRequest,
    user_id: UserId,
    key: BeliefKey,
    payload: ObservationIn,
    idempotency_key: IdempotencyKey | None = IDEMPOTENCY_HEADER,
):
    """Record one observation on the key's channel; its tier comes from the API key, never the body.

    A repeat with the same idempotency key and payload within 24 h is a replay (200) that moves nothing.
    """
    api_key = key_of(request)
    recorded = services.observation_record(
        user_id=user_id,
        key=key,
        value=payload.value,
        channel=api_key.channel,
        observed_at=payload.observed_at,
        content_confidence=payload.content_confidence,
        taint_tier=payload.taint_tier,
        source_id=payload.source_id,
        idempotency_key=sent_idempotency_key(payload.idempotency_key, idempotency_key),
    )
    return Status(200 if recorded.is_idempotent_replay else 201, recorded.revision)


@router.get("/users/{user_id}/beliefs", response=with_errors(**{"200": BeliefPageOut}), auth=READ)
def list_beliefs(request: HttpRequest, user_id: UserId, query: Query[BeliefPageQuery]):
    """An owner's beliefs; `uncertain=true` lists those the memory should ask about, not assert."""
    page = selectors.belief_page(
        user_id=user_id, uncertain=query.uncertain, limit=query.limit, offset=query.offset
    )
    return Status(200, page)


@router.get("/users/{user_id}/beliefs/{key}", response=with_errors(404, **{"200": VerdictOut}), auth=READ)
def get_belief(request: HttpRequest, user_id: UserId, key: BeliefKey):
    """What the memory asserts for this key, how sure it is, and what it set aside."""
    return Status(200, selectors.belief_verdict(user_id=user_id, key=key))


@router.get(
    "/users/{user_id}/beliefs/{key}/revisions",
    response=with_errors(404, **{"200": RevisionPageOut}),
    auth=READ,
)
def list_revisions(request: HttpRequest, user_id: UserId, key: BeliefKey, query: Query[PageQuery]):
    """The key's revision log in the order it is folded (claim time, then arrival)."""
    return Status(
        200, selectors.revision_page(user_id=user_id, key=key, limit=query.limit, offset=query.offset)
    )


@router.get("/keys/me", response=with_errors(**{"200": ApiKeyOut}))
def get_own_key(request: HttpRequest):
    """The calling key: its name, channel, tier, permissions and prefix (any valid key may ask)."""
    return Status(200, request.auth)  # type: ignore[attr-defined]


@router.get("/tiers", response=with_errors(**{"200": TierListOut}), auth=ANY_OWNER_READ)
def list_tiers(request: HttpRequest):
    """The provenance tiers, their ceilings and the channels bound to each.

    A key confined to a prefix sees only its own channel: other tenants' channel names are theirs.
    """
    key = key_of(request)
    only = key.channel.name if key.user_prefix else None
    return Status(200, {"items": selectors.tier_list(only_channel=only)})


@router.put("/tiers/{name}", response=with_errors(404, 411, **{"200": TierChangeOut}), auth=GLOBAL_ADMIN)
def put_tier(request: HttpRequest, name: TierName, payload: TierIn):
    """Change a tier's ceiling (admin, confined to no prefix: tiers are global); affected beliefs are rebuilt."""
    key = key_of(request)
    tier, job = services.tier_update(
        name=name, ceiling=payload.ceiling, description=payload.description, actor=f"api key {key.name}"
    )
    tier.rebuild = job
    return Status(200, tier)


@router.post(
    "/channels", response=with_errors(411, **{"200": ChannelOut, "201": ChannelOut}), auth=GLOBAL_ADMIN
)
def post_channel(request: HttpRequest, payload: ChannelIn):
    """Create a channel on a tier, or rebind one (admin, confined to no prefix: channels are global)."""
    key = key_of(request)
    existed = Channel.objects.filter(name=payload.name).exists()
    channel, job = services.channel_bind(
        name=payload.name,
        tier_name=payload.tier,
        description=payload.description,
        actor=f"api key {key.name}",
    )
    channel.rebuild = job
    return Status(200 if existed else 201, channel)

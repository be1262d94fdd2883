"""The HTTP shapes of the belief and provenance API: explicit In and Out schemas."""

from __future__ import annotations

from typing import Any, Literal

from ninja import Schema
from pydantic import ConfigDict, Field

from atlaso_site.access.models import Channel, ProvenanceTier
from atlaso_site.wire import (
    NO_NUL,
    NOT_BLANK,
    IdempotencyKey,
    OutSchema,
    PageQuery,
    TierName,
    TimeIn,
    UnitInterval,
    VerdictOut,
    WireId,
    WireTime,
    stated_text,
)
from beliefs.domain.values import BELIEF_KEY_PATTERN, CEILING_ABOVE, CEILING_BELOW, MAX_VALUE_LENGTH
from beliefs.services import MAX_SOURCE_ID

CHANNEL_NAME_PATTERN = rf"^[a-z0-9][a-z0-9_-]{{0,{Channel._meta.get_field('name').max_length - 1}}}$"
MAX_DESCRIPTION = ProvenanceTier._meta.get_field("description").max_length

# A belief key in a path: the schema states the rule; services check it (a read of a key that
# breaks it finds nothing: 404).
BeliefKey = stated_text(pattern=f"^{BELIEF_KEY_PATTERN.pattern}$")
SourceId = stated_text(max_length=MAX_SOURCE_ID)


class ObservationIn(Schema):
    model_config = ConfigDict(extra="forbid")

    # At most 500 characters as sent (checked here); services check it is not blank.
    value: str = Field(max_length=MAX_VALUE_LENGTH, json_schema_extra={"pattern": NOT_BLANK})
    observed_at: TimeIn | None = None
    content_confidence: UnitInterval | None = None
    taint_tier: TierName | None = None
    source_id: SourceId | None = None
    idempotency_key: IdempotencyKey | None = None


class RevisionOut(OutSchema):
    kind: Literal["belief_revision"]
    belief_key: str
    value: str
    observed_at: WireTime
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
    deposit_id: WireId | None
    source_id: str | None

    @staticmethod
    def resolve_sequence(revision: Any) -> int:
        # The arrival sequence is the log row's id.
        return revision.id


class RevisionWithVerdictOut(RevisionOut):
    verdict: VerdictOut


class ObservationResultOut(RevisionWithVerdictOut):
    """A posted observation's revision; a replay of its idempotency key answers the original one."""

    is_idempotent_replay: bool


class BeliefPageOut(OutSchema):
    kind: Literal["belief_page"]
    items: list[VerdictOut]
    total: int


class RevisionPageOut(OutSchema):
    kind: Literal["revision_page"]
    items: list[RevisionWithVerdictOut]
    total: int
    limit: int
    offset: int


class TierOut(OutSchema):
    name: str
    ceiling: float
    description: str
    channels: list[str]

    @staticmethod
    def resolve_channels(tier: Any) -> list[str]:
        return sorted(channel.name for channel in tier.channels.all())


class TierListOut(OutSchema):
    kind: Literal["tier_list"]
    items: list[TierOut]


class TierIn(Schema):
    model_config = ConfigDict(extra="forbid")

    ceiling: float | None = Field(None, gt=CEILING_ABOVE, lt=CEILING_BELOW, strict=True)
    description: str | None = Field(None, max_length=MAX_DESCRIPTION, pattern=NO_NUL)


class ChannelIn(Schema):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., pattern=CHANNEL_NAME_PATTERN)
    tier: TierName
    description: str | None = Field(None, max_length=MAX_DESCRIPTION, pattern=NO_NUL)


class RebuildOut(Schema):
    """The job run that rebuilds what a provenance change touched; follow it at /jobs/{id}."""

    id: WireId
    status: str
    total: int
    done: int

    @staticmethod
    def resolve_status(run: Any) -> str:
        return run.reported_status


class TierChangeOut(TierOut):
    kind: Literal["tier"]
    rebuild: RebuildOut | None


class ChannelOut(OutSchema):
    kind: Literal["channel"]
    name: str
    tier: str
    rebuild: RebuildOut | None

    @staticmethod
    def resolve_tier(channel: Any) -> str:
        return channel.tier.name


class ApiKeyOut(OutSchema):
    """The calling key as the server knows it: never its secret or the secret's hash."""

    kind: Literal["api_key"]
    name: str
    channel: str
    tier: str
    permissions: list[str]
    user_prefix: str
    created_at: WireTime

    @staticmethod
    def resolve_channel(key: Any) -> str:
        return key.channel.name

    @staticmethod
    def resolve_tier(key: Any) -> str:
        return key.channel.tier.name


class BeliefPageQuery(PageQuery):
    uncertain: bool | None = None

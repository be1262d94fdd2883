"""The HTTP shapes of the belief and provenance API: explicit In and Out schemas."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Schema
from pydantic import ConfigDict, Field

from atlaso_site.lib.wire import OutSchema, PageQuery, VerdictOut, WireId, WireTime


class ObservationIn(Schema):
    model_config = ConfigDict(extra="forbid")

    value: str
    observed_at: datetime | None = None
    content_confidence: float | None = None
    taint_tier: str | None = None
    source_id: str | None = None


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

    ceiling: float | None = Field(None, gt=0, lt=1)
    description: str | None = Field(None, max_length=500)


class ChannelIn(Schema):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")
    tier: str
    description: str | None = Field(None, max_length=500)


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


class BeliefPageQuery(PageQuery):
    uncertain: bool | None = None

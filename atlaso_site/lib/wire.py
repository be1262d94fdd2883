"""Wire shapes that more than one router declares: the error envelope, a page query, a scope,
a deposit and a belief verdict. Each shape is written once, here; apps' own shapes stay in
their `schemas.py`. Out schemas read typed objects (dataclasses, model instances) by attribute,
so they are the only serialisation: timestamps become ISO 8601 with microseconds and offset.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Annotated, Any, Literal, get_args, get_origin
from uuid import UUID

from ninja import Schema
from ninja.schema import Resolver, ResolverMetaclass
from pydantic import BeforeValidator, ConfigDict, Field

from atlaso_site.lib.paging import MAX_OFFSET
from atlaso_site.lib.timefmt import isoformat

Polarity = Literal["positive", "negative", "cautionary", "open"]
EvidenceGrade = Literal["anecdotal", "observed", "replicated", "verified"]
ReproStatus = Literal["unreplicated", "replicated", "failed_repro"]


def _iso(value: Any) -> Any:
    return isoformat(value) if isinstance(value, datetime) else value


def _text(value: Any) -> Any:
    return str(value) if isinstance(value, UUID) else value


def _strings(values: Any) -> Any:
    return (
        [_text(v) for v in values] if isinstance(values, Sequence) and not isinstance(values, str) else values
    )


def _pairs(value: Any) -> Any:
    """A mapping from a sequence of (key, value) pairs, order kept."""
    return value if isinstance(value, Mapping) else dict(value)


# A timestamp on the wire: the schema says string, a datetime is written as ISO 8601.
WireTime = Annotated[str, BeforeValidator(_iso)]
# An id on the wire: a UUID is written as text.
WireId = Annotated[str, BeforeValidator(_text)]
WireIds = Annotated[list[str], BeforeValidator(_strings)]


class _KindFillsItself(ResolverMetaclass):
    """Gives a schema declaring `kind: Literal["x"]` a resolver that answers "x"."""

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any) -> Any:
        cls = super().__new__(mcs, name, bases, namespace, **kwargs)
        field = cls.model_fields.get("kind")
        if field is not None and get_origin(field.annotation) is Literal:
            (value,) = get_args(field.annotation)
            cls._ninja_resolvers["kind"] = Resolver(staticmethod(lambda _obj: value))
        return cls


class OutSchema(Schema, metaclass=_KindFillsItself):
    """An Out schema whose `kind: Literal["..."]` fills itself from its one value.

    So the objects it reads need no `kind` attribute, and the OpenAPI document still marks
    `kind` required (a default would make it optional for generated clients).
    """


class ErrorDetail(Schema):
    model_config = ConfigDict(extra="allow")

    code: str
    message: str
    field: str | None = None
    allowed: list[str] | None = None
    gate_reason: str | None = None
    missing: list[str] | None = None
    idempotency_key: str | None = None
    existing_id: str | None = None


class ErrorOut(Schema):
    kind: str = "error"
    error: ErrorDetail


def with_errors(*statuses: int, **success: Any) -> dict[int, Any]:
    """A `response=` mapping: the success schemas plus the envelope for each error status.

    Every operation can answer 401, 403, 422 and 503; callers add the others they use.
    """
    mapping: dict[int, Any] = {int(status): schema for status, schema in success.items()}
    for status in {401, 403, 422, 503, *statuses}:
        mapping[status] = ErrorOut
    return mapping


class PageQuery(Schema):
    limit: int = Field(50, ge=1, le=200)
    offset: int = Field(0, ge=0, le=MAX_OFFSET)


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


class DepositOut(OutSchema):
    kind: Literal["deposit"]
    id: WireId
    content: str
    polarity: Polarity
    evidence_grade: EvidenceGrade
    scope: ScopeOut
    user_id: str
    tags: list[str]
    contradicts: WireIds
    artifact_refs: list[str]
    created_at: WireTime
    author: str | None
    author_role: str | None
    repro_status: ReproStatus
    task_id: str | None
    channel: str | None
    belief: BeliefRefOut | None


class DepositDetailOut(DepositOut):
    superseded_by: WireIds
    retracted: bool
    retracted_reason: str | None


class VerdictOut(OutSchema):
    kind: Literal["belief_verdict"]
    belief_key: str
    fact: str | None
    probability: float
    distribution: Annotated[dict[str, float], BeforeValidator(_pairs)]
    unknown_mass: float
    superseded: list[str]
    contested: list[str]
    inert: list[str]
    entropy_bits: float
    is_uncertain: bool
    observation_count: int
    effective_count: int
    updated_at: WireTime | None

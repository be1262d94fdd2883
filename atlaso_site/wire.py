"""Wire shapes that more than one router declares, each written once here.

The error envelope, a page query, a scope, a deposit and a belief verdict; apps' own shapes stay in
their `schemas.py`. Out schemas read typed objects (dataclasses, model instances) by attribute, so
they are the only serialisation: timestamps become ISO 8601 with microseconds and offset.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, get_args, get_origin
from uuid import UUID

from ninja import Header, Schema
from ninja.schema import Resolver, ResolverMetaclass
from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, Strict, WithJsonSchema
from pydantic_core import PydanticCustomError

from atlaso_site.lib.idempotency import MAX_KEY_LENGTH
from atlaso_site.lib.paging import MAX_OFFSET
from atlaso_site.lib.text import INVISIBLE_CLASS
from atlaso_site.lib.timefmt import isoformat
from atlaso_site.lib.user_ids import USER_ID_PATTERN, USER_ID_RULE, validate_user_id

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


# --- What a client may send: the rules the OpenAPI document states ---------------------------
# The document states every rule the server enforces, so a client (or schemathesis) can tell a
# valid request from the schema alone. A rule the domain validation checks, with a message that
# teaches the fix, is stated here from the same constants and checked there, once; the wire
# types below only refuse what pydantic would otherwise coerce (a number for a time, "5" for 5).

# No string the API reads may hold NUL: PostgreSQL cannot store it (atlaso_site.lib.text).
NO_NUL = r"^[^\x00]*$"
# Python's whitespace (str.isspace: what strip() and split() remove), spelled for any regex
# dialect: ECMA-262's \s and Python's differ (U+001C..U+001F, U+FEFF).
SPACE = r"\t-\r\x1c- \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
# What makes text show something: a character neither whitespace, invisible (lib.text) nor NUL.
_SHOWN = rf"[^{SPACE}{INVISIBLE_CLASS}\x00]"
# Text that shows something (lib.text.is_blank is false), and no NUL.
NOT_BLANK = rf"^[^\x00]*{_SHOWN}[^\x00]*$"
# The rule-stating keywords of a JSON schema (what `checked_per_item` moves into prose).
RULE_KEYWORDS = (
    "minLength", "maxLength", "pattern", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "minItems", "maxItems",
)  # fmt: skip


def stripped_within(max_length: int) -> str:
    """The pattern of text of 1..max_length characters once stripped, that shows something and has no NUL.

    Showing something means not only whitespace and invisible characters.
    """
    edge = rf"[^{SPACE}\x00]"
    shows = rf"(?=[{SPACE}{INVISIBLE_CLASS}]*{_SHOWN})"
    return rf"^{shows}[{SPACE}]*{edge}(?:[^\x00]{{0,{max_length - 2}}}{edge})?[{SPACE}]*$"


def stated_text(
    *, min_length: int = 0, max_length: int | None = None, pattern: str = NO_NUL, description: str = ""
) -> Any:
    """`str` whose schema states a rule the domain validation checks (and words the fix for)."""
    schema: dict[str, Any] = {"type": "string", "pattern": pattern}
    if min_length:
        schema["minLength"] = min_length
    if max_length is not None:
        schema["maxLength"] = max_length
    if description:
        schema["description"] = description
    return Annotated[str, WithJsonSchema(schema)]


def _json_integer(value: Any) -> Any:
    """A JSON number without a fraction as an int (JSON Schema counts 5.0 an integer too)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def stated_integer(minimum: int, maximum: int, *, in_query: bool = False) -> Any:
    """An integer whose range the domain validation checks: a JSON integer in a body, text in a query.

    In a body never "5" or true; in a query, text that pydantic reads as an integer.
    """
    schema = WithJsonSchema({"type": "integer", "minimum": minimum, "maximum": maximum})
    if in_query:
        return Annotated[int, schema]
    return Annotated[int, Strict(), BeforeValidator(_json_integer), schema]


# A JSON number from 0 to 1 (never "0.5" or true); the domain validation checks the range.
UnitInterval = Annotated[float, Strict(), WithJsonSchema({"type": "number", "minimum": 0, "maximum": 1})]

# RFC 3339's date-time, the OpenAPI `date-time` format: a date, T, a time, an offset.
_DATE_TIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:[Zz]|[+-][0-9]{2}:[0-9]{2})"
)
_DATE_TIME_RULE = "must be an ISO 8601 time with an offset, e.g. 2025-06-01T09:30:00Z"


def _date_time_text(value: Any) -> Any:
    """Only RFC 3339 text reaches pydantic's parser, which also reads numbers and bare dates."""
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or _DATE_TIME.fullmatch(value) is None:
        raise PydanticCustomError("date_time_format", _DATE_TIME_RULE)
    return value


def _in_utc(value: datetime) -> datetime:
    """A time that exists in UTC too (0001-01-01T00:00:00+01:00 does not), so it can be stored."""
    try:
        value.astimezone(UTC)
    except OverflowError:
        raise PydanticCustomError("date_time_range", "is before year 1 or after year 9999 in UTC") from None
    return value


# A `user_id` path parameter: the schema states the rule; lib.users.validate_user_id checks it,
# after the key's permission (checked before any parameter is parsed), with the message that
# teaches it (an AtlasoError, which the validation passes through, not a ValueError).
UserId = Annotated[
    str,
    AfterValidator(validate_user_id),
    WithJsonSchema({"type": "string", "pattern": USER_ID_PATTERN.pattern, "description": USER_ID_RULE}),
]
# An idempotency key, in a body or the Idempotency-Key header (IDEMPOTENCY_HEADER); lib.idempotency
# checks it, with the message that teaches it.
IdempotencyKey = stated_text(min_length=1, max_length=MAX_KEY_LENGTH)
IDEMPOTENCY_HEADER = Header(None, alias="Idempotency-Key")
# A provenance tier's name, a slug (the tier model's SlugField(max_length=64)); a name that
# names no tier is refused by the service that looks it up.
TierName = stated_text(
    pattern=r"^[-a-zA-Z0-9_]{1,64}$", description="A provenance tier's name (GET /tiers lists them)."
)
# An id in a path: the schema says UUID; text of any other shape names nothing (404).
UuidText = Annotated[str, WithJsonSchema({"type": "string", "format": "uuid"})]

# A claim time as a client sends it: RFC 3339 text with an offset, nothing else.
TimeIn = Annotated[datetime, BeforeValidator(_date_time_text), AfterValidator(_in_utc)]


def _without_rules(schema: Any) -> list[str]:
    """Remove the rule keywords from `schema` and its branches; the rules removed, as text."""
    if not isinstance(schema, dict):
        return []
    removed = [f"{key} {schema.pop(key)}" for key in RULE_KEYWORDS if key in schema]
    for branch in [*schema.get("anyOf", ()), schema.get("items")]:
        removed += _without_rules(branch)
    return removed


def checked_per_item(schema: dict[str, Any], _model: type) -> None:
    """A bulk item's schema, its value rules turned into prose.

    The server judges each item alone and reports one that breaks a rule in `failed` (200), where a
    schema rule would promise a 422 for the whole request. Types, enums, required fields and formats
    stay: the whole request is refused when one of those is broken.
    """
    for prop in schema.get("properties", {}).values():
        rules = _without_rules(prop)
        if rules:
            note = "Checked per item (an item that breaks it is reported in `failed`): " + "; ".join(rules)
            prop["description"] = f"{prop['description']} {note}" if "description" in prop else note


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
    # The request's X-Request-ID, to quote when asking about it (the server's logs carry it).
    request_id: str | None = None


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


class BagScopeOut(Schema):
    """The six facets that key a bag (the deposit's scope without its note)."""

    model: str | None
    dataset: str | None
    env: str | None
    version: str | None
    n: int | None
    seed: int | None


class ScopeOut(BagScopeOut):
    """A deposit's scope: the six facets and the free-text note."""

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

"""Validation of what a client sends, with errors that teach the fix."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from atlaso_site.lib.errors import VALIDATION_ERROR, AtlasoError, invalid
from atlaso_site.lib.idempotency import validate_idempotency_key
from atlaso_site.lib.text import first_unstorable, is_blank, unstorable
from atlaso_site.lib.user_ids import USER_ID_RULE, is_user_id
from beliefs.domain.values import (
    BeliefInputError,
    clean_belief_key,
    clean_content_confidence,
    clean_value,
)
from deposits.domain.types import (
    ENUMS,
    EVIDENCE_GRADES,
    INT_FACETS,
    POLARITIES,
    REPRO_STATUSES,
    TEXT_FACETS,
    Scope,
)

MAX_CONTENT = 8000
MAX_FACET = 200
MAX_NOTE = 2000
MAX_LIST = 32
MAX_TAG = 64
MAX_ARTIFACT = 512
MAX_CONTRADICTS = 100
MAX_PROVENANCE = 200
MAX_REASON = 2000
MAX_BULK_ITEMS = 1000
# A 64-bit signed integer is what both databases store for n and seed.
INT_FACET_RANGE = (-(2**63), 2**63 - 1)


class DepositValidationError(AtlasoError, ValueError):
    """A field the client sent breaks a rule; `message` says which rule and how to fix it."""

    def __init__(self, field: str, message: str, allowed: list[str] | None = None) -> None:
        details: dict[str, Any] = {"field": field}
        if allowed is not None:
            details["allowed"] = allowed
        super().__init__(VALIDATION_ERROR, message, **details)
        self.field = field
        self.allowed = allowed


@dataclass(frozen=True, slots=True)
class BeliefClaim:
    """The belief a deposit speaks to: key and value, plus how the claim was made."""

    key: str
    value: str
    content_confidence: float | None = None
    taint_tier: str | None = None
    observed_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class DepositDraft:
    """A validated, normalised deposit that has not been written yet."""

    user_id: str
    content: str
    polarity: str = "open"
    evidence_grade: str = "anecdotal"
    scope: Scope = Scope()  # noqa: RUF009 (frozen: one shared empty scope is safe)
    tags: tuple[str, ...] = ()
    artifact_refs: tuple[str, ...] = ()
    contradicts: tuple[str, ...] = ()
    author: str | None = None
    author_role: str | None = None
    task_id: str | None = None
    repro_status: str = "unreplicated"
    belief: BeliefClaim | None = None

    @property
    def has_provenance(self) -> bool:
        """Provenance for the gate: an artifact, or the env or version the claim was seen in."""
        return bool(self.artifact_refs) or self.scope.env is not None or self.scope.version is not None


def enum_message(field: str, meanings: dict[str, str] | None = None) -> str:
    """The pedagogical message for a bad enum value: every allowed value with its meaning.

    `meanings` for a field whose name two enums share (`mode`: a retraction's, recall's); else
    the field's own enum.
    """
    meanings = ENUMS[field] if meanings is None else meanings
    width = max(len(value) for value in meanings) + 2
    lines = [f"{field} must be one of:"]
    lines += [f"  {f'"{value}"':<{width}} — {meaning}" for value, meaning in meanings.items()]
    return "\n".join(lines)


def validate_user_id(user_id: Any) -> str:
    """Return the user_id when it fits the pattern, else raise a teaching error."""
    if not is_user_id(user_id):
        raise DepositValidationError("user_id", USER_ID_RULE)
    return user_id


def validate_enum(field: str, value: Any, *, default: str | None = None) -> str:
    if value is None and default is not None:
        return default
    if not isinstance(value, str) or value not in ENUMS[field]:
        raise DepositValidationError(field, enum_message(field), allowed=list(ENUMS[field]))
    return value


def _optional_text(field: str, value: Any, limit: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise DepositValidationError(field, f"{field} must be a string of at most {limit} characters")
    if len(value) > limit:
        raise DepositValidationError(
            field, f"{field} is {len(value)} characters; the limit is {limit}. Shorten it."
        )
    return value


def validate_content(value: Any, field: str = "content") -> str:
    if not isinstance(value, str) or is_blank(value):
        raise DepositValidationError(
            field,
            f"{field} must be a non-empty claim in plain words, "
            'e.g. "Threshold 0.7 over-flags in production"',
        )
    content = value.strip()
    if len(content) > MAX_CONTENT:
        raise DepositValidationError(
            field,
            f"{field} is {len(content)} characters; the limit is {MAX_CONTENT}. Split it into "
            "separate claims, or keep the detail in an artifact and list it in artifact_refs.",
        )
    return content


def refuse_unstorable(data: Mapping[str, Any]) -> None:
    """Raise for the first string in `data`'s fields, nested ones too, that no database can store.

    Such a string holds a NUL or a lone surrogate. A bulk reports it as that item's failure.
    """
    found = first_unstorable(data)
    if found is not None:
        field, problem = found
        raise DepositValidationError(field, f"{field} holds {problem}")


def validate_reason(value: Any) -> str:
    """A contradiction's reason: required, 1..2000 characters once stripped."""
    if isinstance(value, str) and (problem := unstorable(value)) is not None:
        raise DepositValidationError("reason", f"reason holds {problem}")
    if not isinstance(value, str) or is_blank(value):
        raise DepositValidationError(
            "reason",
            "reason is required: say why the earlier deposits no longer hold "
            '(e.g. "re-measured on the fixed eval set")',
        )
    reason = value.strip()
    if len(reason) > MAX_REASON:
        raise DepositValidationError(
            "reason", f"reason is {len(reason)} characters; the limit is {MAX_REASON}."
        )
    return reason


def validate_scope(value: Any) -> Scope:
    """The deposit's scope: known facets only, each within its bounds (none given: no scope)."""
    if value is None:
        return Scope()
    if isinstance(value, Scope):
        value = asdict(value)
    if not isinstance(value, Mapping):
        raise DepositValidationError(
            "scope", "scope must be an object with any of model, dataset, env, version, n, seed, note"
        )
    unknown = sorted(set(value) - {*TEXT_FACETS, *INT_FACETS, "note"})
    if unknown:
        raise DepositValidationError(
            f"scope.{unknown[0]}",
            f"scope has no facet {unknown[0]!r}; the facets are model, dataset, env, version, n, "
            "seed, and note for free text",
        )
    facets: dict[str, Any] = {name: _text_facet(name, value.get(name)) for name in TEXT_FACETS}
    facets.update((name, _int_facet(name, value.get(name))) for name in INT_FACETS)
    return Scope(**facets, note=_scope_note(value.get("note")))


def _text_facet(name: str, text: Any) -> str | None:
    if text is not None and (not isinstance(text, str) or not 1 <= len(text) <= MAX_FACET):
        raise DepositValidationError(
            f"scope.{name}",
            f"scope.{name} must be a string of 1..{MAX_FACET} characters, or left out "
            "(an empty string would make a different bag from no value at all)",
        )
    return text


def _int_facet(name: str, number: Any) -> int | None:
    low, high = INT_FACET_RANGE
    if number is not None and (
        isinstance(number, bool) or not isinstance(number, int) or not low <= number <= high
    ):
        raise DepositValidationError(
            f"scope.{name}", f"scope.{name} must be a whole number (64-bit), or left out"
        )
    return number


def _scope_note(note: Any) -> str | None:
    if note is not None and (not isinstance(note, str) or len(note) > MAX_NOTE):
        raise DepositValidationError(
            "scope.note", f"scope.note must be a string of at most {MAX_NOTE} characters"
        )
    return note


def _string_list(field: str, value: Any, *, max_items: int, max_len: int) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list | tuple) or not all(isinstance(item, str) for item in value):
        raise DepositValidationError(field, f"{field} must be a list of strings")
    if len(value) > max_items:
        raise DepositValidationError(
            field, f"{field} has {len(value)} entries; at most {max_items} are allowed"
        )
    for item in value:
        if not 1 <= len(item) <= max_len:
            raise DepositValidationError(
                field, f"each entry of {field} must be 1..{max_len} characters; one is {len(item)}"
            )
    return tuple(value)


def validate_belief(value: Any) -> BeliefClaim | None:
    """The deposit's `belief` object; the claim time is checked against the clock at write time."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise DepositValidationError(
            "belief",
            'belief must be an object {key, value}, e.g. {"key": "coffee_ratio", "value": "5 oz per tbsp"}',
        )
    try:
        observed_at = value.get("observed_at")
        if observed_at is not None and (
            not isinstance(observed_at, datetime) or observed_at.utcoffset() is None
        ):
            raise BeliefInputError(
                "observed_at",
                "observed_at must be an ISO 8601 time with an offset, e.g. 2025-06-01T09:30:00Z",
            )
        taint = value.get("taint_tier")
        if taint is not None and not isinstance(taint, str):
            raise BeliefInputError("taint_tier", "taint_tier must name a provenance tier, e.g. web_fetch")
        return BeliefClaim(
            key=clean_belief_key(value.get("key")),
            value=clean_value(value.get("value")),
            content_confidence=clean_content_confidence(value.get("content_confidence")),
            taint_tier=taint,
            observed_at=observed_at,
        )
    except BeliefInputError as error:
        raise DepositValidationError(f"belief.{error.field}", error.message) from error


def validate_deposit(user_id: str, data: Mapping[str, Any], *, storable: bool = False) -> DepositDraft:
    """Turn a client's fields into a `DepositDraft`, or raise the first rule it breaks.

    `storable`: the caller has found every string of `data` storable already (a bulk asks once
    for all its items)."""
    if not storable:
        refuse_unstorable(data)
    contradicts = _string_list("contradicts", data.get("contradicts"), max_items=MAX_CONTRADICTS, max_len=64)
    return DepositDraft(
        user_id=validate_user_id(user_id),
        content=validate_content(data.get("content")),
        polarity=validate_enum("polarity", data.get("polarity"), default=POLARITIES[-1]),
        evidence_grade=validate_enum(
            "evidence_grade", data.get("evidence_grade"), default=EVIDENCE_GRADES[0]
        ),
        scope=validate_scope(data.get("scope")),
        tags=_string_list("tags", data.get("tags"), max_items=MAX_LIST, max_len=MAX_TAG),
        artifact_refs=_string_list(
            "artifact_refs", data.get("artifact_refs"), max_items=MAX_LIST, max_len=MAX_ARTIFACT
        ),
        contradicts=tuple(dict.fromkeys(contradicts)),
        author=_optional_text("author", data.get("author"), MAX_PROVENANCE),
        author_role=_optional_text("author_role", data.get("author_role"), MAX_PROVENANCE),
        task_id=_optional_text("task_id", data.get("task_id"), MAX_PROVENANCE),
        repro_status=validate_enum("repro_status", data.get("repro_status"), default=REPRO_STATUSES[0]),
        belief=validate_belief(data.get("belief")),
    )


@dataclass(frozen=True, slots=True)
class CorrectionDraft:
    """A validated correction: the deposit it writes and why it supersedes the ones it lists.

    `inherits_scope`: sent without a scope, it lands in the bag of the first deposit it
    corrects (the service reads that deposit's scope).
    """

    draft: DepositDraft
    reason: str
    inherits_scope: bool


def validate_correction(user_id: str, data: Mapping[str, Any]) -> CorrectionDraft:
    """Turn a client's correction into a `CorrectionDraft`, or raise the first rule it breaks."""
    validate_user_id(user_id)
    reason = validate_reason(data.get("reason"))
    contradicts = data.get("contradicts")
    if not isinstance(contradicts, list) or not contradicts:
        raise DepositValidationError(
            "contradicts", "contradicts must list at least one id of the deposit(s) this corrects"
        )
    draft = validate_deposit(user_id, data)
    return CorrectionDraft(draft=draft, reason=reason, inherits_scope=data.get("scope") is None)


@dataclass(frozen=True, slots=True)
class BulkItem:
    """One item of a bulk add as validated: its draft and key, or the error that refused it.

    `sent` is the item as the client sent it, echoed back when the item fails.
    """

    index: int
    sent: Mapping[str, Any]
    draft: DepositDraft | None = None
    key: str | None = None
    error: AtlasoError | None = None


@dataclass(frozen=True, slots=True)
class BulkDraft:
    """A validated bulk add: the owner, what to do when an item fails, and every item."""

    user_id: str
    on_gate_reject: str
    items: tuple[BulkItem, ...]


def _bulk_item(index: int, item: Mapping[str, Any], user_id: str, *, storable: bool) -> BulkItem:
    try:
        key = validate_idempotency_key(item.get("idempotency_key"))
        if key is None:
            raise invalid(
                "idempotency_key",
                "each bulk item needs an idempotency_key, so retrying a partly failed batch is safe",
            )
        draft = validate_deposit(user_id, item, storable=storable)
        return BulkItem(index=index, sent=item, draft=draft, key=key)
    except AtlasoError as error:
        return BulkItem(index=index, sent=item, error=error)


def validate_bulk(
    user_id: str, items: Sequence[Mapping[str, Any]], on_gate_reject: str = "skip"
) -> BulkDraft:
    """A bulk add's owner, mode and size checked (raising), then each item validated on its own."""
    validate_user_id(user_id)
    mode = validate_enum("on_gate_reject", on_gate_reject, default="skip")
    if len(items) > MAX_BULK_ITEMS:
        raise invalid(
            "items",
            f"items holds {len(items)} entries; at most {MAX_BULK_ITEMS} per call. Send several batches: "
            "the idempotency keys make retrying any of them safe.",
        )
    # One question for every item's strings; only when one is unstorable is each item asked.
    storable = first_unstorable(list(items)) is None
    return BulkDraft(
        user_id=user_id,
        on_gate_reject=mode,
        items=tuple(_bulk_item(index, item, user_id, storable=storable) for index, item in enumerate(items)),
    )

"""Every API call as data: what to send and how to read the answer, shared by sync and async.

A builder checks its arguments (the seeds' pedagogical refusals happen here, before any
request), and returns an `Operation`; `Memory` and `AsyncMemory` only send it. So a method's
rules exist once, whichever client runs it.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from atlaso._errors import AtlasoError, InputValidationError, error_from_code
from atlaso._types import (
    FACETS,
    AddItem,
    AddManyResult,
    AddResult,
    ApiKeyInfo,
    Bag,
    BagPage,
    BeliefPage,
    BeliefRef,
    BeliefRevision,
    BeliefVerdict,
    BulkReject,
    Deposit,
    DepositPage,
    Diagnostics,
    ForgetResult,
    ImportResult,
    PeekView,
    RecallMode,
    RetractResult,
    Scope,
    SearchResults,
)
from atlaso._validation import check_enum, check_range, check_text, check_user_id

T = TypeVar("T")

MAX_BULK = 1000  # items the server takes in one bulk request
ScopeLike = Scope | Mapping[str, Any]
BeliefLike = BeliefRef | Mapping[str, Any]
ItemLike = AddItem | Mapping[str, Any]
# An id, or what a call returned (AddResult, Deposit, SearchResult: anything with an `.id`).
IdLike = Any
ITEM_FIELDS = tuple(f.name for f in fields(AddItem))


@dataclass(frozen=True, slots=True)
class Operation(Generic[T]):
    """One request below `/api/v1`, and how its JSON answer becomes a result."""

    method: str
    path: str
    parse: Callable[[Any], T]
    params: Mapping[str, Any] | None = None
    body: Any = None
    idempotency_key: str | None = None
    # Safe to send again after a lost answer: a read, or a write the server deduplicates by key.
    retry_safe: bool = False
    user_id: str | None = None
    headers: Mapping[str, str] | None = None
    # A body that is not JSON (an import's file), made anew for each attempt.
    content: Callable[[], Any] | None = None
    # The answer is handed over unread, to be read as it arrives (an export).
    stream: bool = False
    # A whole memory in one request: its answer may pause for minutes.
    slow: bool = False


def _path(*segments: str) -> str:
    return "/" + "/".join(quote(str(segment), safe="") for segment in segments)


def _owner(user_id: str, *rest: str) -> str:
    check_user_id(user_id)
    return _path("users", user_id, *rest)


def new_idempotency_key() -> str:
    """A random key for a write the caller gave none: its retries land once, a second call twice."""
    return "ak_" + secrets.token_hex(16)


def scope_wire(scope: ScopeLike | None, *, facets_only: bool = False) -> dict[str, Any]:
    """The facets a scope sets (and its note, unless only facets are wanted)."""
    if scope is None:
        return {}
    if not isinstance(scope, (Scope, Mapping)):
        raise InputValidationError(
            f"scope must be a Scope or a dict of facets, not {type(scope).__name__}", field="scope"
        )
    values = scope.to_dict() if isinstance(scope, Scope) else dict(scope)
    allowed = FACETS if facets_only else (*FACETS, "note")
    unknown = sorted(set(values) - {*FACETS, "note"})
    if unknown:
        raise InputValidationError(
            f"scope has no facet {unknown[0]!r}; the facets are {', '.join(FACETS)} (and note)",
            field="scope",
        )
    if facets_only and values.get("note") is not None:
        raise InputValidationError(
            "a filter compares facets only, and note is not a facet; to find claims by their note, "
            "put its words in the query",
            field="scope.note",
        )
    return {name: values[name] for name in allowed if values.get(name) is not None}


def _id(field: str, value: IdLike) -> str:
    found = value if isinstance(value, str) else getattr(value, "id", None)
    if not isinstance(found, str) or not found:
        raise InputValidationError(
            f"{field} takes deposit ids (or what add() and recall() return), not {value!r}", field=field
        )
    return found


def _ids(field: str, value: IdLike | Sequence[IdLike] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or hasattr(value, "id"):
        return [_id(field, value)]
    if not isinstance(value, Sequence):
        raise InputValidationError(f"{field} must be a list of deposit ids, not {value!r}", field=field)
    return [_id(field, v) for v in value]


def _texts(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """A list of texts; one text alone is a list of one (never split into characters)."""
    if not value:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def _belief(belief: BeliefLike | None) -> dict[str, Any] | None:
    if belief is None:
        return None
    if isinstance(belief, BeliefRef):
        return belief.to_dict()
    return {k: _wire_time(v) for k, v in belief.items() if v is not None}


def _wire_time(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def _deposit_body(
    content: str,
    *,
    polarity: str,
    evidence_grade: str,
    scope: ScopeLike | None,
    tags: Sequence[str] | None,
    artifact_refs: Sequence[str] | None,
    contradicts: IdLike | Sequence[IdLike] | None,
    author: str | None,
    author_role: str | None,
    task_id: str | None,
    belief: BeliefLike | None,
) -> dict[str, Any]:
    check_text("content", content)
    check_enum("polarity", polarity)
    check_enum("evidence_grade", evidence_grade)
    body: dict[str, Any] = {"content": content, "polarity": polarity, "evidence_grade": evidence_grade}
    if scope is not None:
        body["scope"] = scope_wire(scope)
    for name, values in (("tags", tags), ("artifact_refs", artifact_refs)):
        if values:
            body[name] = list(_texts(values))
    if contradicts:
        body["contradicts"] = _ids("contradicts", contradicts)
    for name, text in (("author", author), ("author_role", author_role), ("task_id", task_id)):
        if text is not None:
            body[name] = text
    wire_belief = _belief(belief)
    if wire_belief is not None:
        body["belief"] = wire_belief
    return body


def add(
    user_id: str,
    text: str,
    *,
    polarity: str = "open",
    evidence_grade: str = "anecdotal",
    scope: ScopeLike | None = None,
    tags: Sequence[str] | None = None,
    artifact_refs: Sequence[str] | None = None,
    contradicts: IdLike | Sequence[IdLike] | None = None,
    author: str | None = None,
    author_role: str | None = None,
    task_id: str | None = None,
    belief: BeliefLike | None = None,
    idempotency_key: str | None = None,
) -> Operation[AddResult]:
    body = _deposit_body(
        text,
        polarity=polarity,
        evidence_grade=evidence_grade,
        scope=scope,
        tags=tags,
        artifact_refs=artifact_refs,
        contradicts=contradicts,
        author=author,
        author_role=author_role,
        task_id=task_id,
        belief=belief,
    )
    return Operation(
        "POST",
        _owner(user_id, "deposits"),
        AddResult.from_wire,
        body=body,
        idempotency_key=idempotency_key or new_idempotency_key(),
        retry_safe=True,
        user_id=user_id,
    )


def contradict(
    user_id: str,
    new_text: str,
    contradicts: IdLike | Sequence[IdLike],
    *,
    reason: str,
    polarity: str = "open",
    evidence_grade: str = "anecdotal",
    scope: ScopeLike | None = None,
    tags: Sequence[str] | None = None,
    artifact_refs: Sequence[str] | None = None,
    author: str | None = None,
    author_role: str | None = None,
    task_id: str | None = None,
    belief: BeliefLike | None = None,
    idempotency_key: str | None = None,
) -> Operation[AddResult]:
    check_text("reason", reason)
    ids = _ids("contradicts", contradicts)
    if not ids:
        raise InputValidationError("contradicts must name at least one deposit id", field="contradicts")
    body = _deposit_body(
        new_text,
        polarity=polarity,
        evidence_grade=evidence_grade,
        scope=scope,
        tags=tags,
        artifact_refs=artifact_refs,
        contradicts=ids,
        author=author,
        author_role=author_role,
        task_id=task_id,
        belief=belief,
    )
    body["reason"] = reason
    return Operation(
        "POST",
        _owner(user_id, "contradict"),
        AddResult.from_wire,
        body=body,
        idempotency_key=idempotency_key or new_idempotency_key(),
        retry_safe=True,
        user_id=user_id,
    )


def _bulk_row(index: int, item: Any) -> AddItem:
    """One bulk item as a clean AddItem: its fields checked by name, its enums and key checked."""
    at = f"items.{index}"
    if isinstance(item, AddItem):
        values = {name: getattr(item, name) for name in ITEM_FIELDS}
    elif isinstance(item, Mapping):
        unknown = sorted(set(item) - set(ITEM_FIELDS))
        if unknown:
            raise InputValidationError(
                f"{at} has no field {unknown[0]!r}; an item's fields are {', '.join(ITEM_FIELDS)}",
                field=f"{at}.{unknown[0]}",
            )
        values = {name: item[name] for name in ITEM_FIELDS if name in item}
    else:
        raise InputValidationError(f"{at} must be an AddItem or a dict, not {type(item).__name__}", field=at)
    if not values.get("idempotency_key"):
        raise InputValidationError(
            f"{at} has no idempotency_key: every bulk item needs one, so a retried batch is safe "
            '(idempotency_key("my-import", row_id) makes a stable one)',
            field=f"{at}.idempotency_key",
        )
    # The server refuses a whole request for a bad enum, so these fail here, before any batch.
    check_enum("polarity", values.get("polarity", "open"), at=f"{at}.polarity")
    check_enum("evidence_grade", values.get("evidence_grade", "anecdotal"), at=f"{at}.evidence_grade")
    scope = values.get("scope")
    if scope is not None:
        values["scope"] = Scope.from_wire(scope_wire(scope))
    for name in ("tags", "artifact_refs"):
        values[name] = _texts(values.get(name))
    values["contradicts"] = tuple(_ids(f"{at}.contradicts", values.get("contradicts")))
    return AddItem(**values)


def bulk_items(items: Sequence[ItemLike] | Any) -> list[AddItem]:
    """The items as clean AddItems, every one checked before any is sent, keys required."""
    if isinstance(items, (str, bytes, Mapping)):
        raise InputValidationError(
            f"items must be a list of AddItem or dicts, not {type(items).__name__}", field="items"
        )
    return [_bulk_row(index, item) for index, item in enumerate(list(items))]


def add_many_batches(
    user_id: str, items: Sequence[AddItem], *, on_gate_reject: str = "skip"
) -> list[Operation[dict[str, Any]]]:
    """The bulk requests for `items`, at most 1,000 each; `abort` must fit one request."""
    check_enum("on_gate_reject", on_gate_reject)
    if on_gate_reject == "abort" and len(items) > MAX_BULK:
        raise InputValidationError(
            f'on_gate_reject="abort" commits all or nothing in one request of at most {MAX_BULK} items; '
            f"got {len(items)}. Split the batch yourself, or use skip",
            field="items",
        )
    path = _owner(user_id, "deposits", "bulk")
    return [
        Operation(
            "POST",
            path,
            dict,
            body={
                "items": [item.to_dict() for item in items[start : start + MAX_BULK]],
                "on_gate_reject": on_gate_reject,
            },
            retry_safe=True,  # every item carries its key: a resent batch replays
            user_id=user_id,
        )
        for start in range(0, len(items), MAX_BULK)
    ]


def _bulk_error(error: Mapping[str, Any]) -> Exception:
    code = error.get("code")
    message = str(error.get("message", "rejected"))
    details = {k: v for k, v in error.items() if k not in ("code", "message")}
    return error_from_code(code, message, details, status_code=None) or AtlasoError(
        message, code=code, details=details
    )


def add_many_result(items: Sequence[AddItem], answers: Sequence[dict[str, Any]]) -> AddManyResult:
    """One result from the batches' answers, each reject's index counted in the whole list."""
    committed: list[Deposit] = []
    duplicates: list[Deposit] = []
    failed: list[BulkReject] = []
    for batch, answer in enumerate(answers):
        offset = batch * MAX_BULK
        committed += [Deposit.from_wire(d) for d in answer.get("committed", ())]
        duplicates += [Deposit.from_wire(d) for d in answer.get("duplicates", ())]
        for reject in answer.get("failed", ()):
            index = offset + int(reject["index"])
            failed.append(BulkReject(index=index, item=items[index], error=_bulk_error(reject["error"])))
    return AddManyResult(
        committed=tuple(committed),
        duplicates=tuple(duplicates),
        failed=tuple(failed),
        is_partial=bool(failed) and bool(committed or duplicates),
    )


def recall(
    user_id: str,
    query: str,
    *,
    limit: int = 10,
    scope: ScopeLike | None = None,
    include_superseded: bool = False,
    mode: RecallMode | None = None,
) -> Operation[SearchResults]:
    check_text("query", query)
    check_range("limit", limit, 1, 1000)
    params = {"q": query, "limit": limit, **scope_wire(scope, facets_only=True)}
    if include_superseded:
        params["include_superseded"] = True
    if mode is not None:
        # words, meaning or hybrid; left out, the server chooses (recall-by-meaning.md).
        check_enum("mode", mode)
        params["mode"] = mode
    return Operation(
        "GET",
        _owner(user_id, "recall"),
        SearchResults.from_wire,
        params=params,
        retry_safe=True,
        user_id=user_id,
    )


def get(user_id: str, deposit_id: str) -> Operation[Deposit]:
    check_text("deposit_id", deposit_id)
    return Operation(
        "GET", _owner(user_id, "deposits", deposit_id), Deposit.from_wire, retry_safe=True, user_id=user_id
    )


def list_recent(
    user_id: str, *, limit: int = 20, offset: int = 0, include_retracted: bool = False
) -> Operation[DepositPage]:
    check_range("limit", limit, 1, 200)
    check_range("offset", offset, 0, 2**31 - 1)
    params: dict[str, Any] = {"limit": limit, "offset": offset}
    if include_retracted:
        params["include_retracted"] = True
    return Operation(
        "GET",
        _owner(user_id, "deposits"),
        DepositPage.from_wire,
        params=params,
        retry_safe=True,
        user_id=user_id,
    )


def retract(
    user_id: str, deposit_id: str, *, reason: str, hard_delete: bool = False
) -> Operation[RetractResult]:
    check_text("deposit_id", deposit_id)
    check_text("reason", reason)
    return Operation(
        "DELETE",
        _owner(user_id, "deposits", deposit_id),
        RetractResult.from_wire,
        params={"mode": "hard" if hard_delete else "soft", "reason": reason},
        user_id=user_id,
    )


def health(user_id: str, *, window_days: int = 30) -> Operation[Diagnostics]:
    check_range("window_days", window_days, 1, 365)
    return Operation(
        "GET",
        _owner(user_id, "health"),
        Diagnostics.from_wire,
        params={"window_days": window_days},
        retry_safe=True,
        user_id=user_id,
    )


def peek(user_id: str, *, limit: int = 10) -> Operation[PeekView]:
    check_range("limit", limit, 1, 200)
    return Operation(
        "GET",
        _owner(user_id, "peek"),
        PeekView.from_wire,
        params={"limit": limit},
        retry_safe=True,
        user_id=user_id,
    )


def bags(
    user_id: str,
    *,
    conflict: bool | None = None,
    scope: ScopeLike | None = None,
    limit: int = 50,
    offset: int = 0,
) -> Operation[BagPage]:
    check_range("limit", limit, 1, 500)
    check_range("offset", offset, 0, 2**31 - 1)
    params: dict[str, Any] = {"limit": limit, "offset": offset, **scope_wire(scope, facets_only=True)}
    if conflict is not None:
        params["conflict"] = conflict
    return Operation(
        "GET", _owner(user_id, "bags"), BagPage.from_wire, params=params, retry_safe=True, user_id=user_id
    )


def bag(user_id: str, bag_id: str) -> Operation[Bag]:
    check_text("bag_id", bag_id)
    return Operation("GET", _owner(user_id, "bags", bag_id), Bag.from_wire, retry_safe=True, user_id=user_id)


def belief(user_id: str, key: str) -> Operation[BeliefVerdict]:
    check_text("key", key)
    return Operation(
        "GET", _owner(user_id, "beliefs", key), BeliefVerdict.from_wire, retry_safe=True, user_id=user_id
    )


def beliefs(
    user_id: str, *, uncertain: bool | None = None, limit: int = 50, offset: int = 0
) -> Operation[BeliefPage]:
    check_range("limit", limit, 1, 200)
    check_range("offset", offset, 0, 2**31 - 1)
    params: dict[str, Any] = {"limit": limit, "offset": offset}
    if uncertain is not None:
        params["uncertain"] = uncertain
    return Operation(
        "GET",
        _owner(user_id, "beliefs"),
        BeliefPage.from_wire,
        params=params,
        retry_safe=True,
        user_id=user_id,
    )


def observe(
    user_id: str,
    key: str,
    value: str,
    *,
    observed_at: datetime | str | None = None,
    content_confidence: float | None = None,
    taint_tier: str | None = None,
    source_id: str | None = None,
) -> Operation[BeliefRevision]:
    check_text("key", key)
    check_text("value", value)
    fields = {
        "observed_at": _wire_time(observed_at),
        "content_confidence": content_confidence,
        "taint_tier": taint_tier,
        "source_id": source_id,
    }
    body = {"value": value, **{k: v for k, v in fields.items() if v is not None}}
    # Not retried: the server does not yet deduplicate observations, and a resent one would
    # count twice.
    return Operation(
        "POST",
        _owner(user_id, "beliefs", key, "observations"),
        BeliefRevision.from_wire,
        body=body,
        user_id=user_id,
    )


def key_info() -> Operation[ApiKeyInfo]:
    return Operation("GET", _path("keys", "me"), ApiKeyInfo.from_wire, retry_safe=True)


# --- A whole memory: export, import, forget (portability.md) -----------------------------------

IMPORT_FORMATS = ("atlaso", "mem0")
NDJSON = "application/x-ndjson"


def _same(value: T) -> T:
    return value


def export(user_id: str, *, include_retracted: bool = True, gzip: bool = False) -> Operation[Any]:
    """The owner's export, its answer handed over unread (an `httpx.Response` to stream)."""
    return Operation(
        "GET",
        _owner(user_id, "export"),
        _same,
        params={"include_retracted": "true" if include_retracted else "false"},
        headers={"Accept": NDJSON, "Accept-Encoding": "gzip" if gzip else "identity"},
        retry_safe=True,
        user_id=user_id,
        stream=True,
        slow=True,
    )


def import_(
    user_id: str,
    content: Callable[[], Any],
    *,
    length: int | None,
    format: str = "atlaso",
    dry_run: bool = False,
    on_gate_reject: str = "skip",
) -> Operation[ImportResult]:
    """An import of a body `content()` makes, made again for each attempt.

    The import is idempotent as a whole, so a retry after a cut connection writes only what the
    first did not.
    """
    if format not in IMPORT_FORMATS:
        raise InputValidationError(
            f"format must be one of: {', '.join(IMPORT_FORMATS)}", field="format", allowed=IMPORT_FORMATS
        )
    check_enum("on_gate_reject", on_gate_reject)
    headers = {"Content-Type": "application/json" if format == "mem0" else NDJSON}
    if length is not None:
        headers["Content-Length"] = str(length)
    return Operation(
        "POST",
        _owner(user_id, "import"),
        ImportResult.from_wire,
        params={"format": format, "dry_run": "true" if dry_run else None, "on_gate_reject": on_gate_reject},
        headers=headers,
        content=content,
        retry_safe=True,
        user_id=user_id,
        slow=True,
    )


def forget(user_id: str, *, confirm: str) -> Operation[ForgetResult]:
    check_text("confirm", confirm)
    return Operation(
        "DELETE",
        _owner(user_id),
        ForgetResult.from_wire,
        params={"confirm": confirm},
        # Forgetting twice forgets nothing more.
        retry_safe=True,
        user_id=user_id,
        slow=True,
    )

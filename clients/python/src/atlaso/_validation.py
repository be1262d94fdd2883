"""What the client refuses before sending: the seeds' pedagogical messages, word for word."""

from __future__ import annotations

import hashlib
import re
from typing import Any, NoReturn

import httpx

from atlaso._errors import ConfigValidationError, InputValidationError
from atlaso._invisible import INVISIBLE_RANGES

POLARITY_MEANINGS = {
    "positive": "claim that X works / is true",
    "negative": "claim that X doesn't work / failed",
    "cautionary": "claim with caveats",
    "open": "note or open question",
}
EVIDENCE_GRADE_MEANINGS = {
    "anecdotal": "one person, one observation, no logs",
    "observed": "measured at least once with artifacts",
    "replicated": "multiple independent observations agree",
    "verified": "replicated and recorded with provenance",
}
ON_GATE_REJECT_MEANINGS = {
    "skip": "commit every item that passes, report the others",
    "abort": "commit nothing when any item fails",
}
RECALL_MODE_MEANINGS = {
    "words": "full text: the claims that share a word with the query",
    "meaning": "embeddings: the claims that say what the query asks, in any words",
    "hybrid": "both rankings, fused by reciprocal rank",
}
ENUMS = {
    "polarity": POLARITY_MEANINGS,
    "evidence_grade": EVIDENCE_GRADE_MEANINGS,
    "on_gate_reject": ON_GATE_REJECT_MEANINGS,
    "mode": RECALL_MODE_MEANINGS,
}
# Each client's kind of transport: the client that takes it, and the transport to name as an example.
TRANSPORTS: dict[type[httpx.BaseTransport | httpx.AsyncBaseTransport], tuple[str, str]] = {
    httpx.BaseTransport: ("Memory", "httpx.HTTPTransport"),
    httpx.AsyncBaseTransport: ("AsyncMemory", "httpx.AsyncHTTPTransport"),
}
# Names a reader may reach for to change a deposit; the error says what to do instead.
MUTATORS = frozenset({"update", "edit"})
IMMUTABLE_MESSAGE = (
    'deposits are immutable. Use user.contradict(new_text, contradicts=[old.id], reason="…") instead.'
)


def enum_message(field: str) -> str:
    """`polarity must be one of:` then each value with its meaning, aligned as the seeds show."""
    meanings = ENUMS[field]
    width = max(len(value) for value in meanings) + 2
    lines = [f"{field} must be one of:"]
    quoted = {value: '"' + value + '"' for value in meanings}
    lines += [f"  {quoted[value]:<{width}} — {meaning}" for value, meaning in meanings.items()]
    return "\n".join(lines)


def check_enum(field: str, value: Any, *, at: str | None = None) -> None:
    """Refuse a value not in the enum; `at` names where it was (e.g. items.3.polarity)."""
    if not isinstance(value, str) or value not in ENUMS[field]:
        where = f"{at}: " if at else ""
        raise InputValidationError(
            where + enum_message(field), field=at or field, allowed=tuple(ENUMS[field])
        )


def check_transport(transport: object, kind: type[httpx.BaseTransport | httpx.AsyncBaseTransport]) -> None:
    """Refuse a `transport` that is not of the `kind` its client sends with, saying what to pass."""
    if transport is None or isinstance(transport, kind):
        return
    client, example = TRANSPORTS[kind]
    message = (
        f"transport must be an httpx.{kind.__name__} (e.g. httpx.MockTransport or {example}), "
        f"not {type(transport).__name__}"
    )
    if isinstance(transport, (httpx.Client, httpx.AsyncClient)):
        message += f": pass {client}(transport=...) the transport, not a client"
    for other, (other_client, _) in TRANSPORTS.items():
        if other is not kind and isinstance(transport, other):
            message += f"; {other_client} takes an httpx.{other.__name__}"
    raise ConfigValidationError(message)


def immutable(name: str, owner: str) -> NoReturn:
    """Answer a reach for `update` or `edit` (`MUTATORS`) with what to do instead, on `owner`."""
    raise AttributeError(IMMUTABLE_MESSAGE.replace("user.", owner), name=name)


def check_range(field: str, value: Any, low: int, high: int) -> None:
    # bool is an int in Python; the server reads true as no number.
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InputValidationError(
            f"{field} must be a whole number from {low} to {high}, got {value!r}", field=field
        )


# Characters that show nothing: text made only of these and whitespace counts as empty (api.md).
_INVISIBLE_RUN = re.compile(
    "[" + "".join(f"{chr(first)}-{chr(last)}" for first, last in INVISIBLE_RANGES) + "]+"
)
# The server's rule for a memory owner's id (domain.md), so a bad one fails here, by name.
USER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}")
USER_ID_RULE = (
    "user_id must be 1..128 characters of letters, digits and _ . : @ -, starting with a letter or "
    'digit (e.g. "alice" or "tenant-a:alice")'
)


def check_text(field: str, value: Any) -> None:
    if not isinstance(value, str) or is_blank(value):
        raise InputValidationError(f"{field} must be non-empty text, got {value!r}", field=field)


def is_blank(text: str) -> bool:
    """Whether `text` shows nothing: only whitespace and invisible characters, as the server counts."""
    return not _INVISIBLE_RUN.sub("", text).strip()


def check_user_id(user_id: Any) -> None:
    if not isinstance(user_id, str) or not USER_ID.fullmatch(user_id):
        raise InputValidationError(f"{USER_ID_RULE}; got {user_id!r}", field="user_id")


def idempotency_key(*parts: object) -> str:
    """A replay-safe key for the parts: `"ak_"` + blake2b-16 hex of them joined by `\\x1f`.

    Same parts, same key, in any language: the server computes it the same way.
    """
    joined = "\x1f".join(str(part) for part in parts)
    return "ak_" + hashlib.blake2b(joined.encode("utf-8"), digest_size=16).hexdigest()

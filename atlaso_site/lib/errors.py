"""The one neutral error of services and selectors: a code, a message and details; no HTTP.

The API edge (`atlaso_site.api`) maps each code to a status and renders the envelope; a view
shows the message. Codes are stable strings because API clients branch on them.
"""

from __future__ import annotations

from typing import Any

VALIDATION_ERROR = "validation_error"
GATE_REJECTED = "gate_rejected"
MISSING_CONTRADICTS = "missing_contradicts"
IDEMPOTENCY_CONFLICT = "idempotency_conflict"
IMMUTABLE = "immutable"
NOT_FOUND = "not_found"
FORBIDDEN = "forbidden"
CONFLICT = "conflict"
UNAVAILABLE = "unavailable"
PAYLOAD_TOO_LARGE = "payload_too_large"
ERASED = "erased"
LENGTH_REQUIRED = "length_required"
UNAUTHORIZED = "unauthorized"
METHOD_NOT_ALLOWED = "method_not_allowed"
INTERNAL_ERROR = "internal_error"
# Recall by meaning was asked for and no embedder is configured (recall-by-meaning.md).
EMBEDDER_UNAVAILABLE = "embedder_unavailable"

# The one map from an error's code to its HTTP status, read by the API's handlers and by the
# middleware that wraps the framework's own refusals; services and selectors know no HTTP.
ERROR_STATUS: dict[str, int] = {
    VALIDATION_ERROR: 422,
    GATE_REJECTED: 422,
    MISSING_CONTRADICTS: 422,
    IDEMPOTENCY_CONFLICT: 409,
    IMMUTABLE: 405,
    METHOD_NOT_ALLOWED: 405,
    NOT_FOUND: 404,
    UNAUTHORIZED: 401,
    FORBIDDEN: 403,
    UNAVAILABLE: 503,
    PAYLOAD_TOO_LARGE: 413,
    ERASED: 410,
    LENGTH_REQUIRED: 411,
    INTERNAL_ERROR: 500,
    EMBEDDER_UNAVAILABLE: 422,
}


class AtlasoError(Exception):
    """A failure the caller can act on: `code` says what kind, `message` how to fix it."""

    def __init__(self, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"


def invalid(field: str, message: str, **details: Any) -> AtlasoError:
    """A validation_error naming the field at fault."""
    return AtlasoError(VALIDATION_ERROR, message, field=field, **details)


def not_found(message: str) -> AtlasoError:
    return AtlasoError(NOT_FOUND, message)

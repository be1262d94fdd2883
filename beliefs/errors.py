"""The API's one error envelope: `{"kind": "error", "error": {"code", "message", ...details}}`.

It lives in the lowest app so every router can declare it; `atlaso_site.api` renders it.
"""

from __future__ import annotations

from typing import Any

from ninja import Schema
from pydantic import ConfigDict

ERROR_STATUS: dict[str, int] = {
    "validation_error": 422,
    "gate_rejected": 422,
    "missing_contradicts": 422,
    "idempotency_conflict": 409,
    "immutable": 405,
    "method_not_allowed": 405,
    "not_found": 404,
    "unauthorized": 401,
    "forbidden": 403,
    "unavailable": 503,
    "internal_error": 500,
}


class ApiError(Exception):
    """An error a client can act on; rendered in the envelope with its status."""

    def __init__(self, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.status = ERROR_STATUS[code]
        self.message = message
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "error", "error": {"code": self.code, "message": self.message, **self.details}}


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

"""The one error tree, as the seeds document it, and the map from an API error to its class."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

# The command that makes a key, as typed in the Atlaso checkout beside `make run`: its Python is
# the checkout's .venv (a bare `python` may not have Django), and manage.py finds the secret key
# `make run` keeps in var/ by itself.
MAKE_A_KEY = ".venv/bin/python manage.py create_api_key --name my-agent --channel my-agent --tier agent_own"
HOW_TO_GET_A_KEY = (
    "no API key: pass Memory(api_key=...) or set ATLASO_API_KEY. Make one in the Atlaso checkout "
    f"(where `make run` runs) with `{MAKE_A_KEY}` (the secret is its last line), or paste the "
    "export line `make run` prints"
)


class AtlasoError(Exception):
    """Every error the client raises. Those built from a server answer carry its details.

    `code` is the API's error code (`gate_rejected`, `not_found`, …); `status_code`, `response`
    and `request_id` are set when the server answered, and None when the client refused a call
    before sending it or could not reach the server.
    """

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status_code: int | None = None,
        response: httpx.Response | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status_code = status_code
        self.response = response
        self.details: Mapping[str, Any] = dict(details or {})

    @property
    def request_id(self) -> str | None:
        if self.response is None:
            return None
        value: str | None = self.response.headers.get("x-request-id")
        return value


class ConfigurationError(AtlasoError):
    """The client, or a call's arguments, cannot work as given."""


class ConfigValidationError(ConfigurationError):
    """A constructor argument is wrong (say, an httpx.Client where a transport belongs)."""


class InputValidationError(ConfigurationError):
    """A field the server (or the client, before sending) refused: `.field`, and `.allowed` for an enum."""

    def __init__(
        self, message: str, *, field: str | None = None, allowed: Sequence[str] | None = None, **kw: Any
    ) -> None:
        super().__init__(message, **kw)
        self.field = field
        self.allowed = tuple(allowed) if allowed is not None else None


class MissingContradictsError(InputValidationError):
    """`contradicts` names ids this owner has no deposit for: `.missing`."""

    def __init__(self, message: str, *, missing: Sequence[str] = (), **kw: Any) -> None:
        kw.setdefault("field", "contradicts")
        super().__init__(message, **kw)
        self.missing = tuple(missing)


class EmbedderUnavailableError(InputValidationError):
    """Recall by meaning (or hybrid) asked of a server with no embedder: ask with mode="words"."""


class AuthenticationError(AtlasoError):
    """No API key, or one the server does not accept (unknown or revoked): 401."""


class TransportError(AtlasoError):
    """The request did not get a usable answer."""


class ConnectError(TransportError):
    """The server could not be reached (refused, reset, DNS); retried."""


class RequestTimeoutError(TransportError):
    """The server did not answer within the timeout; retried."""


class APIStatusError(TransportError):
    """The server answered with an error status that has no more specific class here."""


class PermissionDeniedError(APIStatusError):
    """The key lacks the permission, or is confined to other owners: 403, not retried."""


class NotFoundError(APIStatusError):
    """No such deposit, bag or belief for this owner: 404, not retried."""


class PayloadTooLargeError(APIStatusError):
    """The request body is over the server's limit: 413, not retried. Split the bulk."""


class RateLimitError(APIStatusError):
    """429: retried after `.retry_after` seconds (None when the server named no time)."""

    def __init__(self, message: str, *, retry_after: float | None = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.retry_after = retry_after


class ServerError(APIStatusError):
    """5xx, 503 `unavailable` (database or broker down) included: retried."""


class FieldError(AtlasoError):
    """A claim the memory refuses to hold as written."""


class DepositRejectedError(FieldError):
    """The write gate refused the claim: `.gate_reason` names the rule and what would pass."""

    def __init__(self, message: str, *, gate_reason: str | None = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.gate_reason = gate_reason


class IdempotencyKeyConflict(AtlasoError):
    """The key already wrote a different payload within 24 h: `.idempotency_key`, `.existing_id`."""

    def __init__(
        self, message: str, *, idempotency_key: str | None = None, existing_id: str | None = None, **kw: Any
    ) -> None:
        super().__init__(message, **kw)
        self.idempotency_key = idempotency_key
        self.existing_id = existing_id


def retry_after_seconds(value: str | None) -> float | None:
    """A `Retry-After` header as seconds from now: a number of seconds, or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def error_from_code(
    code: str | None, message: str, details: Mapping[str, Any], **kw: Any
) -> AtlasoError | None:
    """The error a code names, whatever the status; None for codes that only a status maps."""
    kw["details"] = details
    if code == "gate_rejected":
        return DepositRejectedError(message, gate_reason=details.get("gate_reason"), code=code, **kw)
    if code == "missing_contradicts":
        return MissingContradictsError(message, missing=details.get("missing") or (), code=code, **kw)
    if code == "embedder_unavailable":
        return EmbedderUnavailableError(message, field=details.get("field"), code=code, **kw)
    if code == "validation_error":
        return InputValidationError(
            message, field=details.get("field"), allowed=details.get("allowed"), code=code, **kw
        )
    if code == "idempotency_conflict":
        return IdempotencyKeyConflict(
            message,
            idempotency_key=details.get("idempotency_key"),
            existing_id=details.get("existing_id"),
            code=code,
            **kw,
        )
    return None


_BY_STATUS: dict[int, type[APIStatusError]] = {
    403: PermissionDeniedError,
    404: NotFoundError,
    413: PayloadTooLargeError,
}


def error_from_response(response: httpx.Response) -> AtlasoError:
    """The error class an API answer maps to, with the envelope's message and details."""
    status = response.status_code
    try:
        body = response.json()
    except ValueError:
        body = None
    envelope = body.get("error") if isinstance(body, dict) else None
    if isinstance(envelope, dict):
        code = envelope.get("code")
        message = str(envelope.get("message") or f"HTTP {status}")
        details = {k: v for k, v in envelope.items() if k not in ("code", "message")}
    else:
        code = None
        message = f"HTTP {status}: {response.text[:200]}" if response.text else f"HTTP {status}"
        details = {}
    common: dict[str, Any] = {"status_code": status, "response": response}
    if status == 401:
        return AuthenticationError(message, code=code, details=details, **common)
    found = error_from_code(code, message, details, **common)
    common["details"] = details
    if found is not None:
        return found
    if status == 429:
        retry_after = retry_after_seconds(response.headers.get("retry-after"))
        return RateLimitError(message, retry_after=retry_after, code=code, **common)
    if status >= 500:
        return ServerError(message, code=code, **common)
    return _BY_STATUS.get(status, APIStatusError)(message, code=code, **common)

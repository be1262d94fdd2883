"""The one NinjaAPI of v1 and its error handlers: every error leaves in one envelope."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import psycopg
from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser

from atlaso_site.access.api_keys import ANY_KEY, api_body_allowance
from atlaso_site.lib.errors import (
    ERROR_STATUS,
    FORBIDDEN,
    GATE_REJECTED,
    INTERNAL_ERROR,
    NOT_FOUND,
    PAYLOAD_TOO_LARGE,
    UNAUTHORIZED,
    UNAVAILABLE,
    VALIDATION_ERROR,
    AtlasoError,
    invalid,
)
from atlaso_site.lib.json_shape import members_over
from atlaso_site.lib.text import first_unstorable
from atlaso_site.observability.context import current_request_id
from atlaso_site.observability.metrics import COMMITTED, DUPLICATE, REFUSED
from beliefs.api import router as beliefs_router
from deposits.api import add_deposit, add_deposits_bulk, contradict
from deposits.api import router as deposits_router
from deposits.api_portability import router as portability_router
from deposits.api_recall import recall_deposits
from deposits.api_recall import router as recall_router
from deposits.domain.meaning import MODE_MEANINGS
from deposits.domain.types import ENUMS
from deposits.domain.validation import enum_message
from diagnostics.api import router as diagnostics_router
from diagnostics.api_forget import router as forget_router
from diagnostics.api_jobs import router as jobs_router

logger = logging.getLogger(__name__)

# Operations whose body holds a list of items judged one by one: a NUL or a lone surrogate in
# one item fails that item (the deposit validation reports it in the bulk's `failed`), not the
# whole request. Keyed by the operation's URL name (its function's name), valued by the list.
PER_ITEM_BODIES = {add_deposits_bulk.__name__: "items"}
# The operations that write deposits, by URL name: their answers are counted by outcome.
SINGLE_WRITES = frozenset({add_deposit.__name__, contradict.__name__})
BULK_WRITES = frozenset({add_deposits_bulk.__name__})
# Every enum a request can carry: ENUMS by field name, and recall's `mode`, whose name a
# retraction's shares.
ENUM_TABLES = (*ENUMS.values(), MODE_MEANINGS)
# Recall's URL name: its time is measured apart, by ranking mode.
RECALL = recall_deposits.__name__


class TextCheckingParser(Parser):
    """Decodes a JSON body once and refuses a string no database can store, naming its field.

    It runs after authentication, when the operation reads its body, which the middleware has
    held to the operation's byte limit (413 unread). Its shape is bounded before it is parsed:
    a few megabytes of `[0,0,…]` would otherwise cost seconds and gigabytes to decode and
    validate, where the same bytes as one string cost nothing.
    """

    def parse_body(self, request: HttpRequest) -> Any:
        body = request.body
        most = api_body_allowance(request).members
        members = members_over(body, most)
        if members is not None:
            raise invalid(
                "body",
                f"the body holds {members:,} JSON values (array elements and object members); "
                f"this operation reads at most {most:,}",
            )
        data = json.loads(body)
        match = request.resolver_match
        per_item = PER_ITEM_BODIES.get(match.url_name if match else "")
        found = first_unstorable(data, skip=frozenset({per_item} if per_item else ()))
        if found is not None:
            field, problem = found
            # ninja turns any parse error into HttpError(400) raised from it: on_http_error
            # renders this error, the cause, instead.
            raise invalid(field, f"{field} holds {problem}")
        return data


def write_outcomes(url_name: str, status: int, data: Any) -> dict[str, int]:
    """How many deposits a write's answer committed, replayed, refused at the gate or refused otherwise.

    Empty for any other operation, and for a write that failed on our side (5xx).
    """
    if url_name in BULK_WRITES and status == 200:
        outcomes = {COMMITTED: len(data["committed"]), DUPLICATE: len(data["duplicates"])}
        for failure in data["failed"]:
            outcome = _refusal(failure["error"]["code"])
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
        return outcomes
    if url_name not in SINGLE_WRITES and url_name not in BULK_WRITES:
        return {}
    if status in (200, 201) and url_name in SINGLE_WRITES:
        return {DUPLICATE if data.get("is_idempotent_replay") else COMMITTED: 1}
    if 400 <= status < 500:
        return {_refusal(data["error"]["code"]): 1}
    return {}


def _refusal(code: str) -> str:
    return GATE_REJECTED if code == GATE_REJECTED else REFUSED


class AtlasoAPI(NinjaAPI):
    """The NinjaAPI that notes on the request what a write's answer did with its deposits.

    The middleware counts it once the request is answered; a request the server judged ahead of its
    body is answered again by the application, and counted only then.
    """

    def create_response(
        self,
        request: HttpRequest,
        data: Any,
        *,
        status: int | None = None,
        temporal_response: HttpResponse | None = None,
    ) -> HttpResponse:
        response = super().create_response(request, data, status=status, temporal_response=temporal_response)
        match = request.resolver_match
        if match is not None and isinstance(data, dict):
            request.write_outcomes = write_outcomes(match.url_name or "", response.status_code, data)  # type: ignore[attr-defined]
        return response


api = AtlasoAPI(
    title="Atlaso API",
    version="1",
    description="Typed, immutable memory for AI agents: deposits, recall with conflict flags, "
    "and provenance-weighted beliefs. Authenticate with `Authorization: Bearer <api key>`.",
    auth=ANY_KEY,
    urls_namespace="api-v1",
    parser=TextCheckingParser(),
)
api.add_router("", deposits_router)
api.add_router("", recall_router)
api.add_router("", diagnostics_router)
api.add_router("", beliefs_router)
api.add_router("", jobs_router)
api.add_router("", portability_router)
api.add_router("", forget_router)

# Names of operation parameters that wrap a whole body or query object; not client fields.
_WRAPPERS = {"payload", "query"}
_SOURCES = {"body", "query", "path", "header", "cookie", "form", "file"}


def envelope(code: str, message: str, **details: Any) -> dict[str, Any]:
    """The one error shape, carrying the request's id so a client can quote it.

    `{"kind": "error", "error": {"code", "message", ...details, "request_id"}}`, `request_id` being
    the request's `X-Request-ID`.
    """
    request_id = current_request_id()
    if request_id is not None:
        details = {**details, "request_id": request_id}
    return {"kind": "error", "error": {"code": code, "message": message, **details}}


def render(request: HttpRequest, error: AtlasoError) -> HttpResponse:
    body = envelope(error.code, error.message, **error.details)
    return api.create_response(request, body, status=ERROR_STATUS[error.code])


@api.exception_handler(AtlasoError)
def on_atlaso_error(request: HttpRequest, exc: AtlasoError) -> HttpResponse:
    return render(request, exc)


def _field(loc: tuple[Any, ...] | list[Any]) -> str:
    parts = [str(part) for part in loc]
    if parts and parts[0] in _SOURCES:
        parts = parts[1:]
    if parts and parts[0] in _WRAPPERS:
        parts = parts[1:]
    return ".".join(parts) or "body"


def _enum_meanings(leaf: str, error: dict[str, Any]) -> dict[str, str] | None:
    """The enum a refused value was checked against, with its meanings, or None for another Literal.

    Told by the values the check expected rather than by the field's name alone, which two enums
    share (`mode`: a retraction's and recall's).
    """
    expected = set(re.findall(r"'([^']*)'", str((error.get("ctx") or {}).get("expected", ""))))
    known = next((table for table in ENUM_TABLES if set(table) == expected), None)
    return known if known is not None else ENUMS.get(leaf)


@api.exception_handler(ValidationError)
def on_validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    first = exc.errors[0] if exc.errors else {"loc": (), "msg": "invalid request"}
    field = _field(first.get("loc", ()))
    leaf = field.rsplit(".", 1)[-1]
    meanings = _enum_meanings(leaf, first) if first.get("type") in {"literal_error", "enum"} else None
    if meanings is not None:
        error = AtlasoError(
            VALIDATION_ERROR, enum_message(leaf, meanings), field=field, allowed=list(meanings)
        )
    elif first.get("type") == "missing":
        error = AtlasoError(VALIDATION_ERROR, f"{field} is required", field=field)
    elif first.get("type") == "extra_forbidden":
        error = AtlasoError(
            VALIDATION_ERROR, f"{field} is not a field of this request; check its spelling", field=field
        )
    else:
        error = AtlasoError(VALIDATION_ERROR, f"{field}: {first.get('msg', 'invalid value')}", field=field)
    return render(request, error)


@api.exception_handler(AuthenticationError)
def on_authentication_error(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return render(
        request,
        AtlasoError(
            UNAUTHORIZED, "a valid, unrevoked API key is required: send Authorization: Bearer <api key>"
        ),
    )


@api.exception_handler(HttpError)
def on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if isinstance(exc.__cause__, AtlasoError):
        # The body parser's own refusal (TextCheckingParser), wrapped by the framework.
        return render(request, exc.__cause__)
    if exc.status_code == 400:
        # The only 400 the framework raises itself: a body that is not JSON.
        error = AtlasoError(VALIDATION_ERROR, "the request body is not valid JSON", field="body")
    elif exc.status_code == 403:
        error = AtlasoError(FORBIDDEN, str(exc))
    elif exc.status_code == 404:
        error = AtlasoError(NOT_FOUND, str(exc))
    else:
        error = AtlasoError(VALIDATION_ERROR, str(exc))
    return render(request, error)


@api.exception_handler(Http404)
def on_not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return render(request, AtlasoError(NOT_FOUND, "no such resource"))


def too_large(request: HttpRequest) -> HttpResponse:
    """413 payload_too_large, naming the operation's own limit (atlaso_site.admission)."""
    limit = api_body_allowance(request).bytes
    return render(
        request,
        AtlasoError(
            PAYLOAD_TOO_LARGE,
            f"the request body is larger than the limit of {limit} bytes; split it (a bulk into "
            "several smaller bulks: their idempotency keys make that safe)",
            limit=limit,
        ),
    )


@api.exception_handler(RequestDataTooBig)
def on_body_too_large(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    return too_large(request)


# A lost or refused connection, whichever layer raises it: Django's wrappers, or the driver's
# own errors from code that talks to it directly (psycopg's OperationalError covers
# AdminShutdown and the pool's PoolTimeout).
@api.exception_handler(OperationalError)
@api.exception_handler(InterfaceError)
@api.exception_handler(psycopg.OperationalError)
@api.exception_handler(psycopg.InterfaceError)
def on_database_down(request: HttpRequest, exc: Exception) -> HttpResponse:
    logger.warning("database unavailable: %s", exc)
    return unavailable(request, "the database is unavailable")


def unavailable(request: HttpRequest, why: str, *, retry_after: int = 5) -> HttpResponse:
    """503 unavailable with Retry-After: nothing was done; the same request may be sent again."""
    response = render(request, AtlasoError(UNAVAILABLE, f"{why}; retry later"))
    response["Retry-After"] = str(retry_after)
    return response


@api.exception_handler(Exception)
def on_unexpected(request: HttpRequest, exc: Exception) -> HttpResponse:
    logger.exception("unexpected error on %s %s", request.method, request.path)
    return render(request, AtlasoError(INTERNAL_ERROR, "an unexpected error occurred; it has been logged"))

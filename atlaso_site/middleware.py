"""Keeps the API's error envelope on responses the framework makes outside any operation."""

from __future__ import annotations

import json
from collections.abc import Callable
from urllib.parse import parse_qsl

from django.http import HttpRequest, HttpResponse, JsonResponse

from atlaso_site.api import envelope

API_PREFIX = "/api/"
_CODES = {401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed"}


class ApiErrorEnvelopeMiddleware:
    """An unknown API path (404) or method (405) still answers in the JSON error envelope."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        field = _field_with_nul(request) if request.path.startswith(API_PREFIX) else None
        if field is not None:
            # PostgreSQL cannot store NUL in text; refuse it up front, for every field alike.
            message = f"{field} holds a NUL character (\\u0000), which cannot be stored; remove it"
            return JsonResponse(envelope("validation_error", message, field=field), status=422)
        response = self.get_response(request)
        if (
            request.path.startswith(API_PREFIX)
            and response.status_code >= 400
            and not response.get("Content-Type", "").startswith("application/json")
        ):
            code = _CODES.get(
                response.status_code, "validation_error" if response.status_code < 500 else "internal_error"
            )
            message = {
                404: f"no API endpoint at {request.path}; see /api/v1/docs",
                405: f"{request.method} is not allowed on {request.path}; see /api/v1/docs",
            }.get(response.status_code, response.reason_phrase)
            answer = JsonResponse(envelope(code, message), status=response.status_code)
            if response.has_header("Allow"):
                answer["Allow"] = response["Allow"]
            return answer
        return response


def _field_with_nul(request: HttpRequest) -> str | None:
    """The name of the first request part holding a NUL character, or None."""
    if "\x00" in request.path:
        return "path"
    for key, value in parse_qsl(request.META.get("QUERY_STRING", ""), keep_blank_values=True):
        if "\x00" in key or "\x00" in value:
            return key.replace("\x00", "") or "query"
    if request.method not in {"POST", "PUT", "PATCH"}:
        return None
    body = request.body
    if b"\x00" in body:
        return "body"
    if b"\\u0000" not in body:
        return None
    # The escape may be an escaped backslash followed by "u0000": only the decoded text knows.
    try:
        return "body" if _holds_nul(json.loads(body)) else None
    except ValueError:
        return None


def _holds_nul(value: object) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(k) or _holds_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_nul(item) for item in value)
    return False

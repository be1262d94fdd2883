"""Keeps the API's error envelope on responses the framework makes outside any operation."""

from __future__ import annotations

import json
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

API_PREFIX = "/api/"
_CODES = {401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed"}


class ApiErrorEnvelopeMiddleware:
    """An unknown API path (404) or method (405) still answers in the JSON error envelope."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            request.path.startswith(API_PREFIX)
            and response.status_code >= 400
            and not response.get("Content-Type", "").startswith("application/json")
        ):
            code = _CODES.get(response.status_code, "validation_error" if response.status_code < 500 else "internal_error")
            message = {
                404: f"no API endpoint at {request.path}; see /api/v1/docs",
                405: f"{request.method} is not allowed on {request.path}; see /api/v1/docs",
            }.get(response.status_code, response.reason_phrase)
            envelope = JsonResponse(
                {"kind": "error", "error": {"code": code, "message": message}}, status=response.status_code
            )
            if response.has_header("Allow"):
                envelope["Allow"] = response["Allow"]
            return envelope
        return response


def is_envelope(body: bytes) -> bool:
    """True when `body` is the API's error envelope (used by tests and the load script)."""
    try:
        data = json.loads(body)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("kind") == "error" and "code" in data.get("error", {})

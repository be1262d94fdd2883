"""The API's whole-request checks of the request line and headers, and its error envelope on
responses the framework makes outside any operation."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from urllib.parse import unquote_to_bytes

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

from atlaso_site.api import envelope
from atlaso_site.lib.errors import (
    ERROR_STATUS,
    FORBIDDEN,
    INTERNAL_ERROR,
    METHOD_NOT_ALLOWED,
    NOT_FOUND,
    UNAUTHORIZED,
    VALIDATION_ERROR,
)
from atlaso_site.lib.text import unstorable

API_PREFIX = "/api/"
# The longest query string the API reads, in bytes as sent (percent-encoded). gunicorn refuses
# a request line over 8,190 bytes, its maximum; the longest path of any operation is 801 bytes
# (/users/{user_id}/beliefs/{key}/revisions with both 128-character parameters percent-encoded
# throughout), so "DELETE " + path + "?" + 7,168 + " HTTP/1.1" = 7,986 bytes always fits, and a
# client gets the same answer from the API behind any server. Checked before any parsing.
MAX_QUERY_STRING = 7 * 1024
# Headers whose values the API uses; a header cannot carry a lone surrogate on the wire
# (WSGI decodes it as Latin-1), but NUL would reach the database.
VALUE_HEADERS = ("Idempotency-Key", "Authorization")
_NOT_UTF8 = (
    "bytes that are not UTF-8 text (an encoded lone surrogate such as %ED%A0%80, or a stray "
    "byte); percent-encode the UTF-8 of whole characters"
)
# Django decodes the path as UTF-8 and percent-encodes again each byte that is not part of valid
# UTF-8 (repercent_broken_unicode), so such a byte shows as %80..%FF in the decoded path. No
# path parameter of the API may hold "%", so this refuses nothing valid.
_REPERCENTED = re.compile("%[89A-F][0-9A-F]")
# The body a page's form may send (Django's default limit); the API has its own, larger one.
PAGE_MAX_BODY = 2_621_440
# The codes of the framework's own refusals, by status, from the one code → status map.
_CODES = {ERROR_STATUS[code]: code for code in (UNAUTHORIZED, FORBIDDEN, NOT_FOUND, METHOD_NOT_ALLOWED)}


class ApiErrorEnvelopeMiddleware:
    """Whole-request checks of an API request's line and headers, and the JSON error envelope on
    responses the framework makes outside any operation (an unknown path, 404; method, 405).

    The body is judged where it is parsed, after authentication (atlaso_site.api's parser).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith(API_PREFIX):
            if _content_length(request) > PAGE_MAX_BODY:
                # The 48 MiB limit is for the API's bulks; no dashboard or login form comes near
                # 2.5 MB, so an anonymous client cannot make a page read 48 MiB into memory.
                return HttpResponse(
                    f"The request body is larger than {PAGE_MAX_BODY:,} bytes.",
                    status=413,
                    content_type="text/plain; charset=utf-8",
                )
            return self.get_response(request)
        refusal = _refused_line(request)
        if refusal is not None:
            field, message = refusal
            return JsonResponse(
                envelope(VALIDATION_ERROR, message, field=field), status=ERROR_STATUS[VALIDATION_ERROR]
            )
        response = self.get_response(request)
        if response.status_code >= 400 and not response.get("Content-Type", "").startswith(
            "application/json"
        ):
            code = _CODES.get(
                response.status_code, VALIDATION_ERROR if response.status_code < 500 else INTERNAL_ERROR
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


def _content_length(request: HttpRequest) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


def _wire_bytes(text: str) -> bytes:
    """A WSGI string as the bytes that came over the wire (WSGI carries them as Latin-1)."""
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def _problem(raw: bytes) -> str | None:
    """Why raw (percent-decoded) bytes are not storable text, or None when they are."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return _NOT_UTF8
    return unstorable(text)


def _readable(name: bytes) -> str:
    """A query parameter's name for a message, whatever bytes it holds."""
    return unquote_to_bytes(name.replace(b"+", b" ")).decode("utf-8", "replace").replace("\x00", "")


def _query_pairs(query: bytes) -> Iterator[tuple[bytes, bytes]]:
    """The (name, value) pairs of a query string, percent-decoded, as raw bytes."""
    for part in query.split(b"&"):
        if part:
            name, _, value = part.partition(b"=")
            yield unquote_to_bytes(name.replace(b"+", b" ")), unquote_to_bytes(value.replace(b"+", b" "))


def _refused_line(request: HttpRequest) -> tuple[str, str] | None:
    """(field, message) for the first part of the request line or a used header that the API
    refuses as a whole: unstorable text, or a query string too long; None when all is well."""
    problem = unstorable(request.path_info)
    if problem is None and _REPERCENTED.search(request.path_info):
        problem = _NOT_UTF8
    if problem is not None:
        return "path", f"path holds {problem}"
    query = _wire_bytes(request.META.get("QUERY_STRING", ""))
    if len(query) > MAX_QUERY_STRING:
        longest = max(query.split(b"&"), key=len)
        name = _readable(longest.partition(b"=")[0]) or "query"
        return name, (
            f"the query string is {len(query)} bytes; the limit is {MAX_QUERY_STRING}. "
            f"Its longest parameter is {name} ({len(longest)} bytes)."
        )
    most = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
    if most is not None and query.count(b"&") + 1 > most:
        # Django's own count (parse_qsl's), which would fail reading the query later.
        return "query", f"the query string has {query.count(b'&') + 1} parameters; the limit is {most}"
    for name, value in _query_pairs(query):
        name_problem = _problem(name)
        if name_problem is not None:
            return "query", f"a query parameter's name holds {name_problem}"
        problem = _problem(value)
        if problem is not None:
            field = name.decode("utf-8")
            return field, f"{field} holds {problem}"
    for header in VALUE_HEADERS:
        value = request.headers.get(header)
        if value is not None and (problem := unstorable(value)) is not None:
            return header, f"the {header} header holds {problem}"
    return None

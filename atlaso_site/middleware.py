"""The API's request-line and header checks and its envelope on answers made outside an operation.

The same failures met on every other page (the dashboard, the login, the admin) are answered as
pages: 400, 503 with Retry-After, a one-line 403.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import unquote_to_bytes

from django.conf import settings
from django.core.exceptions import DisallowedHost, PermissionDenied, RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.log import log_response

from atlaso_site.access.roles import refused
from atlaso_site.admission import BODY_UNREAD, admit, body_allowance, is_admitted, is_api
from atlaso_site.api import envelope, too_large, unavailable
from atlaso_site.lib.errors import (
    ERROR_STATUS,
    FORBIDDEN,
    INTERNAL_ERROR,
    LENGTH_REQUIRED,
    METHOD_NOT_ALLOWED,
    NOT_FOUND,
    UNAUTHORIZED,
    VALIDATION_ERROR,
)
from atlaso_site.lib.text import unstorable
from atlaso_site.ui import pages

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
# The codes of the framework's own refusals, by status, from the one code → status map.
_CODES = {ERROR_STATUS[code]: code for code in (UNAUTHORIZED, FORBIDDEN, NOT_FOUND, METHOD_NOT_ALLOWED)}


class ApiErrorEnvelopeMiddleware:
    """The API's whole-request checks of the line and headers, and its envelope on framework answers.

    The JSON error envelope goes on the responses the framework makes outside any operation: an
    unknown path (404) or method (405).

    The key is checked first, before the line, the headers and the body (atlaso_site.admission);
    the body is judged where it is parsed (atlaso_site.api's parser).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not is_api(request):
            allowance = body_allowance(request)
            if _content_length(request) > allowance.bytes:
                # No form comes near its allowance, so a client cannot make a page read a large
                # body (an anonymous one may send a login form, no more).
                return HttpResponse(
                    f"The request body is larger than {allowance.bytes:,} bytes.",
                    status=413,
                    content_type="text/plain; charset=utf-8",
                )
            return self.get_response(request)
        refusal = _refused_before_the_line(request)
        if refusal is not None:
            return refusal
        refusal = _refused_line(request)
        if refusal is not None:
            field, message = refusal
            return JsonResponse(
                envelope(VALIDATION_ERROR, message, field=field), status=ERROR_STATUS[VALIDATION_ERROR]
            )
        unreadable = read_chunked_body(request)
        if unreadable is not None:
            return unreadable
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


def _refused_before_the_line(request: HttpRequest) -> HttpResponse | None:
    """The refusal of a request by its host, key, permission, owner or body size, or None.

    The host, then the key, its permission and its owner (api.md), then the body's size: all before
    the request line's parameters or the body are read.
    """
    try:
        request.get_host()
    except DisallowedHost as exc:
        # A host this server does not serve: nothing of the request is the API's to judge.
        logging.getLogger("django.security.DisallowedHost").warning("%s", exc)
        return JsonResponse(envelope(VALIDATION_ERROR, str(exc), field="Host"), status=400)
    refusal = admit(request)
    if refusal is not None or not is_admitted(request):
        return refusal
    if _content_length(request) > body_allowance(request).bytes:
        return too_large(request)
    if request.META.get(BODY_UNREAD) and _sends_a_body(request):
        # The server refused this request before its body (the database was down, the key not
        # yet made) and left the body unread; admitted now, it must be sent again.
        return unavailable(request, "this request was refused before its body was read", retry_after=1)
    return None


class _ChunkedInput:
    """A body sent without a length, read to its end but never past `limit` bytes.

    As the server hands it over: its chunks decoded, its end marked. Past `limit`,
    RequestDataTooBig, which the API answers 413 as it does a Content-Length over the limit.
    """

    def __init__(self, stream: Any, limit: int | None) -> None:
        self.stream = stream
        self.limit = limit
        self.read_so_far = 0

    def read(self, size: int | None = -1) -> bytes:
        wanted = None if size is None or size < 0 else size
        parts = []
        while wanted is None or wanted > 0:
            part = self._next_part(wanted)
            if not part:
                break
            parts.append(part)
            if wanted is not None:
                wanted -= len(part)
        return b"".join(parts)

    def _next_part(self, wanted: int | None) -> bytes:
        """The next bytes from the server, a chunk at most and no more than `wanted`.

        Never more than one byte past the limit: that byte refuses the body.
        """
        step = _CHUNK if wanted is None else min(_CHUNK, wanted)
        if self.limit is not None:
            step = min(step, self.limit + 1 - self.read_so_far)
        part = self.stream.read(step) if step > 0 else b""
        self.read_so_far += len(part)
        if self.limit is not None and self.read_so_far > self.limit:
            raise RequestDataTooBig("Request body exceeded the operation's limit.")
        return part

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        """The server's stream is the server's to close."""


# How much of a chunked body is asked of the server at a time.
_CHUNK = 64 * 1024


def read_chunked_body(request: HttpRequest) -> HttpResponse | None:
    """Make an API request's chunked body readable, or refuse it with 411 length_required.

    A chunked body (Transfer-Encoding: chunked, no Content-Length) is refused when the server cannot
    say where it ends.

    Django reads a body by its Content-Length, so without one it would read nothing ("body is
    required"). gunicorn decodes the chunks and promises, by `wsgi.input_terminated`, that its
    input ends with the body; then the body is read from it, later and only if the operation
    reads one (after the key is checked), and never beyond the API's limit. A server that makes
    no such promise (Django's runserver) leaves nothing safe to read: 411.
    """
    meta = request.META
    if meta.get("CONTENT_LENGTH") or "chunked" not in meta.get("HTTP_TRANSFER_ENCODING", "").lower():
        return None
    if not meta.get("wsgi.input_terminated"):
        message = (
            "this server cannot read a body sent without a length (Transfer-Encoding: chunked); "
            "send it with a Content-Length header"
        )
        return JsonResponse(envelope(LENGTH_REQUIRED, message), status=ERROR_STATUS[LENGTH_REQUIRED])
    request._stream = _ChunkedInput(meta["wsgi.input"], body_allowance(request).bytes)  # type: ignore[attr-defined]
    return None


def _sends_a_body(request: HttpRequest) -> bool:
    return _content_length(request) > 0 or "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()


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
    """(field, message) for the first part of the request line or a used header refused whole, or None.

    The API refuses unstorable text there, or a query string too long.
    """
    problem = unstorable(request.path_info)
    if problem is None and _REPERCENTED.search(request.path_info):
        problem = _NOT_UTF8
    if problem is not None:
        return "path", f"path holds {problem}"
    query = _wire_bytes(request.META.get("QUERY_STRING", ""))
    return _oversized_query(query) or _unreadable_query(query) or _refused_header(request)


def _refused_header(request: HttpRequest) -> tuple[str, str] | None:
    """(field, message) for the first header the API reads whose value is not storable text."""
    for header in VALUE_HEADERS:
        value = request.headers.get(header)
        if value is not None and (problem := unstorable(value)) is not None:
            return header, f"the {header} header holds {problem}"
    return None


def _oversized_query(query: bytes) -> tuple[str, str] | None:
    """(field, message) for a query string longer than the API reads, or of more parameters."""
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
    return None


def _unreadable_query(query: bytes) -> tuple[str, str] | None:
    """(field, message) for a query parameter that is not storable text or is given twice; else None.

    Twice with different values is refused because every parameter of the API holds one value, and a
    repeat would be read as its last, whatever the others said.
    """
    seen: dict[bytes, bytes] = {}
    for name, value in _query_pairs(query):
        name_problem = _problem(name)
        if name_problem is not None:
            return "query", f"a query parameter's name holds {name_problem}"
        problem = _problem(value)
        field = name.decode("utf-8")
        if problem is not None:
            return field, f"{field} holds {problem}"
        if seen.setdefault(name, value) != value:
            return field, f"{field} is given more than once, with different values; give it once"
    return None


class PageErrorMiddleware:
    """Every request outside the API meets bad input and outages as the API does, answered as pages.

    The dashboard, the login and the admin get pages where the API gets envelopes.

    A path or query parameter that is not storable text (NUL, a lone surrogate, bytes that are
    not UTF-8) is the 400 page before any view, session or database reads it; a database that
    cannot be reached is the 503 page with Retry-After; an access refusal is the 403 page,
    logged as one line. Each logged once, with no traceback.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not is_api(request):
            problem = _unreadable_page_input(request)
            if problem is not None:
                return pages.bad_request(problem)
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        """A view's (or its template's) lost database or refusal; the API answers its own."""
        if is_api(request):
            return None
        if isinstance(exception, pages.DATABASE_DOWN):
            return page_unavailable(request, exception)
        if isinstance(exception, PermissionDenied):
            return refused(request, exception)
        return None


def page_unavailable(request: HttpRequest, exception: BaseException) -> HttpResponse:
    """The 503 page for a page whose database was lost, logged as one line without a traceback."""
    response = pages.unavailable()
    log_response(
        "database unavailable: %s %s: %s",
        request.method,
        request.path,
        str(exception),
        response=response,
        request=request,
    )
    return response


def _unreadable_page_input(request: HttpRequest) -> str | None:
    """The sentence for the 400 page saying what of a page request is not text; None when all is.

    It looks at the request's path and its query parameters.

    The query is read from its bytes as sent: Django would put U+FFFD for what is not UTF-8
    before a view saw it. The path is read as Django decoded it, each byte that is not UTF-8
    percent-encoded again (_REPERCENTED: no page's path parameter may hold "%" either).
    """
    problem = unstorable(request.path_info)
    if problem is None and _REPERCENTED.search(request.path_info):
        problem = _NOT_UTF8
    if problem is not None:
        return f"The path holds {problem}."
    for name, value in _query_pairs(_wire_bytes(request.META.get("QUERY_STRING", ""))):
        problem = _problem(name)
        if problem is not None:
            return f"A query parameter's name holds {problem}."
        problem = _problem(value)
        if problem is not None:
            return f"The query parameter “{name.decode('utf-8')}” holds {problem}."
    return None

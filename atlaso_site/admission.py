"""Who may send a body, and how large, decided from the request line and headers alone.

The server asks this before it reads a byte of a body (atlaso_site/gunicorn_worker.py), and the
middleware asks it again before any view runs, so an unauthenticated client, a key without the
operation's permission or a key confined to another tenant is refused without its body being
read, and no body is read past its route's limit:

- an API operation: its `ApiKeyAuth` (the key, its permission, its owner) and that rule's
  `BodyAllowance`; a path or method that names no operation reads no body;
- a page: a login form needs kilobytes, so a client without a session may send only that much;
  a signed-in reviewer's forms get `PAGE_BODY`, small enough to be held in memory.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve
from ninja.errors import AuthenticationError
from ninja.operation import Operation, PathView

from atlaso_site.access.api_keys import BodyAllowance, MiB, api_body_allowance
from atlaso_site.api import api

# The environ key by which the web worker (atlaso_site.gunicorn_worker) tells the application that it
# left a request's body unread: refused before its body, the request must not be taken for one
# with an empty body (a database back between the server's check of its key and the
# application's would otherwise admit it with none).
BODY_UNREAD = "atlaso.body_unread"
API_PREFIX = "/api/"
# The environ key by which the server (atlaso_site/gunicorn_worker.py) says it left a body unread.
BODY_UNREAD = "atlaso.body_unread"
DOCS_PATH = API_PREFIX + "v1" + (api.docs_url or "/docs")
# A login form: a CSRF token, a name, a password and where to go next.
LOGIN_BODY = BodyAllowance(bytes=16 * 1024, members=0)
# Any other page's form: a reason of 2,000 characters or a claim of 8,000 is far below this.
PAGE_BODY = BodyAllowance(bytes=1 * MiB, members=0)
NO_BODY = BodyAllowance(bytes=0, members=0)


def is_api(request: HttpRequest) -> bool:
    """An API request: one answered in the error envelope rather than as a page.

    The interactive docs are a page under the API's path (its frame, its login): they meet
    outages and refusals as every other page does.
    """
    return request.path.startswith(API_PREFIX) and request.path.rstrip("/") != DOCS_PATH


def api_operation(request: HttpRequest) -> Operation | None:
    """The API operation this request's path and method name, or None (404 or 405)."""
    try:
        match = resolve(request.path_info)
    except Resolver404:
        return None
    # ninja's view for a path is a closure over the PathView that holds its operations.
    cells = getattr(match.func, "__closure__", None) or ()
    path_view = next((cell.cell_contents for cell in cells if isinstance(cell.cell_contents, PathView)), None)
    if path_view is None:
        return None
    request.resolver_match = match
    return path_view._find_operation(request)


def admit(request: HttpRequest) -> HttpResponse | None:
    """Run the operation's key check now, as the framework would; its refusal, or None.

    The framework runs the same check again when the operation runs, and finds it done
    (ApiKeyAuth remembers the request it admitted).
    """
    operation = api_operation(request)
    if operation is None:
        return None
    for callback in operation.auth_callbacks:
        try:
            key = callback(request)
        except Exception as exc:  # the framework's own handling of a refusing check
            return api.on_exception(request, exc)
        if key:
            request.auth = key  # type: ignore[attr-defined]
            return None
    return api.on_exception(request, AuthenticationError())


def is_admitted(request: HttpRequest) -> bool:
    """Whether an operation's key check let this request through.

    A path or method that names no operation is refused by the framework, its body unread, whatever
    its size.
    """
    return getattr(request, "admitted_by", None) is not None


def body_allowance(request: HttpRequest) -> BodyAllowance:
    """How much body this request may send: for the API, call after `admit` let it through."""
    if not is_api(request):
        signed_in = settings.SESSION_COOKIE_NAME in request.COOKIES
        return PAGE_BODY if signed_in and not _is_login(request.path) else LOGIN_BODY
    return api_body_allowance(request)


def preflight(request: HttpRequest) -> BodyAllowance:
    """The body the server may read for this request before the application runs.

    None (0 bytes) when the request will be refused whatever its body holds, which is then not read
    at all; `streamed` when the operation reads the body itself as it arrives.
    """
    try:
        request.get_host()
    except DisallowedHost:
        return NO_BODY
    if is_api(request) and admit(request) is not None:
        return NO_BODY
    return body_allowance(request)


def _is_login(path: str) -> bool:
    return path in {settings.LOGIN_URL, "/admin/login/"}

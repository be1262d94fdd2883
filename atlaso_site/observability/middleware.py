"""The first middleware: every request's id, count, time and log line, and the three
operator endpoints answered before anything else runs.

`/healthz`, `/readyz` and `/metrics` are answered here, ahead of the host check, the session
and CSRF: a load balancer or Prometheus calls them by the machine's address, which need not
be in `ALLOWED_HOSTS`, and a probe polled every second should cost only its own work.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from urllib.parse import quote

from django.conf import settings
from django.core.signals import request_finished
from django.http import HttpRequest, HttpResponse
from django.utils.functional import empty

from atlaso_site.api import RECALL
from atlaso_site.observability import metrics
from atlaso_site.observability.context import (
    HEADER,
    META_KEY,
    enter_request_id,
    request_id_for,
)
from atlaso_site.observability.exposition import metrics as metrics_view
from atlaso_site.observability.health import healthz, readyz

access_log = logging.getLogger("atlaso.access")

OPERATOR_VIEWS: dict[str, Callable[[HttpRequest], HttpResponse]] = {
    "/healthz": healthz,
    "/readyz": readyz,
    "/metrics": metrics_view,
}
# The route label of requests no URL pattern matched: static files, which whitenoise serves
# before any URL is resolved, and unknown paths (404).
STATIC_ROUTE = "static"
UNMATCHED_ROUTE = "unmatched"
# The ranking a recall used, unless its operation says otherwise (request.recall_mode).
DEFAULT_RECALL_MODE = "words"
# What a logged path keeps as it is; everything else is percent-encoded (RFC 3986's path characters).
PATH_SAFE = "/:@!$&'()*+,;=-._~%"


class ObservedRequests:
    """Gives each request its id (kept from a sane `X-Request-ID`, else made) for its log lines,
    its error envelope and the jobs it starts; answers the operator endpoints; counts and times
    the request by route template, method and status; logs one line for it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.measuring = settings.ATLASO_METRICS
        self.static_prefix = "/" + settings.STATIC_URL.lstrip("/")

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = request_id_for(request.META.get(META_KEY))
        request.request_id = request_id  # type: ignore[attr-defined]
        # Kept until the answer is written and closed (request_finished), not just until this
        # returns: Django logs a refusal after the middleware, and the server logs the write.
        enter_request_id(request_id)
        started = time.perf_counter()
        operator_view = OPERATOR_VIEWS.get(request.path_info)
        if operator_view is not None and (self.measuring or operator_view is not metrics_view):
            response = operator_view(request)
            # Its line is the one below, when it failed: a probe polled every second during an
            # outage is not also Django's error a second.
            response._has_been_logged = True  # type: ignore[attr-defined]
            route = request.path_info.lstrip("/")
        else:
            if self.measuring:
                metrics.IN_PROGRESS.inc()
            try:
                response = self.get_response(request)
            finally:
                if self.measuring:
                    metrics.IN_PROGRESS.dec()
            route = self._route(request)
        seconds = time.perf_counter() - started
        response[HEADER] = request_id
        if self.measuring:
            self._count(request, response, route, seconds)
        if operator_view is None or response.status_code >= 400:
            _log(request, response, route, seconds)
        return response

    def _route(self, request: HttpRequest) -> str:
        match = request.resolver_match
        if match is not None and match.route:
            return match.route
        if request.path_info.startswith(self.static_prefix):
            return STATIC_ROUTE
        return UNMATCHED_ROUTE

    def _count(self, request: HttpRequest, response: HttpResponse, route: str, seconds: float) -> None:
        method = metrics.method_label(request.method)
        metrics.REQUESTS.labels(route=route, method=method, status=str(response.status_code)).inc()
        metrics.REQUEST_SECONDS.labels(route=route, method=method).observe(seconds)
        outcomes = getattr(request, "write_outcomes", None)
        if outcomes:
            metrics.count_writes(outcomes)
        match = request.resolver_match
        if match is not None and match.url_name == RECALL and response.status_code == 200:
            mode = getattr(request, "recall_mode", DEFAULT_RECALL_MODE)
            metrics.RECALL_SECONDS.labels(mode=mode).observe(seconds)


def _log(request: HttpRequest, response: HttpResponse, route: str, seconds: float) -> None:
    """The request's one line: what was asked, how it ended, how long it took, and by whom."""
    status = response.status_code
    duration_ms = round(seconds * 1000, 1)
    # As sent on the wire: a decoded newline or control character would forge a line of its own.
    path = quote(request.path, safe=PATH_SAFE)
    key = getattr(getattr(request, "auth", None), "name", None)
    login = _login(request)
    who = f" key={key}" if key else (f" login={login}" if login else "")
    access_log.log(
        logging.WARNING if status >= 500 else logging.INFO,
        "%s %s %s %.1f ms%s",
        request.method,
        path,
        status,
        duration_ms,
        who,
        extra={
            "method": request.method,
            "path": path,
            "route": route,
            "status": status,
            "duration_ms": duration_ms,
            "key": key,
            "login": login,
            "remote_addr": request.META.get("REMOTE_ADDR"),
        },
    )


def _login(request: HttpRequest) -> str | None:
    """The signed-in dashboard user's name, if the request looked it up: never a query of its own
    (an API request, which reads no session, must not read one for its log line)."""
    user = request.__dict__.get("user")
    if user is None:
        return None
    wrapped = getattr(user, "_wrapped", user)
    if wrapped is empty or not getattr(wrapped, "is_authenticated", False):
        return None
    return wrapped.get_username()


def _leave_request(**kwargs: object) -> None:
    """The answer is written: what this greenlet or thread logs next is no request's."""
    enter_request_id(None)


request_finished.connect(_leave_request, dispatch_uid="atlaso_leave_request_id")

"""The first middleware: every request's id, count, time and log line, and the operator endpoints.

The three operator endpoints are answered before anything else runs.

One line a request. A request answered below 400 gets the access line (`atlaso.access`); one
answered 400 or more already gets Django's own line (`django.request`: the refusal with its
reason, or "Not Found: /x"), which carries the same fields (method, route, status, duration,
key, login: `Observed.fields`, added by the log filter), so it is not said twice.

`/healthz`, `/readyz` and `/metrics` are answered here, ahead of the host check, the session
and CSRF: a load balancer or Prometheus calls them by the machine's address, which need not
be in `ALLOWED_HOSTS`, and a probe polled every second should cost only its own work. They are
logged only when they fail.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.core.signals import request_finished
from django.http import HttpRequest, HttpResponse
from django.utils.functional import empty

from atlaso_site.api import RECALL
from atlaso_site.observability import metrics
from atlaso_site.observability.context import HEADER, META_KEY, enter_request_id, request_id_for
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


class Observed:
    """What the log lines of one request say about it (the log filter asks `fields`)."""

    __slots__ = ("request", "route", "started", "static_prefix")

    def __init__(self, request: HttpRequest, static_prefix: str) -> None:
        self.request = request
        self.started = time.perf_counter()
        self.static_prefix = static_prefix
        self.route: str | None = None

    def seconds(self) -> float:
        return time.perf_counter() - self.started

    def route_label(self) -> str:
        """The route template this request matched (bounded: never its path)."""
        if self.route is not None:
            return self.route
        request = self.request
        match = request.resolver_match
        if match is not None and match.route:
            return match.route
        if request.path_info.startswith(self.static_prefix):
            return STATIC_ROUTE
        return UNMATCHED_ROUTE

    def fields(self, status: int | None) -> dict[str, Any]:
        request = self.request
        return {
            "method": request.method,
            # As sent on the wire: a decoded newline or control character would forge a line.
            "path": quote(request.path, safe=PATH_SAFE),
            "route": self.route_label(),
            "status": status,
            "duration_ms": round(self.seconds() * 1000, 1),
            "key": getattr(getattr(request, "auth", None), "name", None),
            "login": _login(request),
            "remote_addr": request.META.get("REMOTE_ADDR"),
        }


class ObservedRequests:
    """Gives each request its id, counts, times and logs it, and answers the operator endpoints.

    The id is kept from a sane `X-Request-ID`, else made, and goes into the request's log lines, its
    error envelope and the jobs it starts. Requests are counted and timed by route template, method
    and status.
    """

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
        observed = request.observed = Observed(request, self.static_prefix)  # type: ignore[attr-defined]
        operator_view = OPERATOR_VIEWS.get(request.path_info)
        if operator_view is not None and (self.measuring or operator_view is not metrics_view):
            observed.route = request.path_info.lstrip("/")
            response = operator_view(request)
            # Logged below when it failed, as a warning: a probe polled every second during an
            # outage is not also Django's error every second.
            response._has_been_logged = True  # type: ignore[attr-defined]
            if response.status_code >= 400:
                _log(logging.WARNING, observed, response.status_code)
        else:
            if self.measuring:
                metrics.IN_PROGRESS.inc()
            try:
                response = self.get_response(request)
            finally:
                if self.measuring:
                    metrics.IN_PROGRESS.dec()
            if response.status_code < 400:
                _log(logging.INFO, observed, response.status_code)
        response[HEADER] = request_id
        if self.measuring:
            _count(request, response, observed)
        return response


def _count(request: HttpRequest, response: HttpResponse, observed: Observed) -> None:
    route, seconds = observed.route_label(), observed.seconds()
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


def _log(level: int, observed: Observed, status: int) -> None:
    """The request's line: what was asked, how it ended, how long it took, and by whom."""
    fields = observed.fields(status)
    who = (
        f" key={fields['key']}" if fields["key"] else (f" login={fields['login']}" if fields["login"] else "")
    )
    access_log.log(
        level,
        "%s %s %s %.1f ms%s",
        fields["method"],
        fields["path"],
        status,
        fields["duration_ms"],
        who,
        extra=fields,
    )


def _login(request: HttpRequest) -> str | None:
    """The signed-in dashboard user's name, if the request already looked it up.

    Never a query of its own: an API request, which reads no session, must not read one for its log
    line.
    """
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

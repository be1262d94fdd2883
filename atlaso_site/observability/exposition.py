"""`GET /metrics`: Prometheus' text format, for a bearer token or from loopback.

With `ATLASO_METRICS_TOKEN` set, a scrape must send `Authorization: Bearer <token>` (401
otherwise, from any address); without it only loopback may read (403 from elsewhere): a
proxy on the same host must then not pass `/metrics` through, or a token must be set.

A scrape sums every process's figures from the multiprocess folder (see `metrics`) and adds
the readiness checks of `/readyz` (`atlaso_ready`, `atlaso_readiness_check`) and what the
database holds now: open conflicts and the oldest one's age, each job's last success, the runs
not finished by status, and (with an embedder) the embedding backlog and its oldest deposit's
wait. A database that cannot be read costs those series alone, not the
scrape.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
from collections.abc import Iterator

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from atlaso_site.job_runs.selectors import job_last_successes, job_runs_unfinished
from atlaso_site.observability.health import OK, readiness
from deposits.selectors.embedding import embedding_status
from deposits.selectors.owners import open_conflicts_now

logger = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def metrics(request: HttpRequest) -> HttpResponse:
    """Every series, for a caller `may_scrape` lets in."""
    refusal = _refusal(request)
    if refusal is not None:
        return refusal
    response = HttpResponse(exposition(), content_type=CONTENT_TYPE)
    response["Cache-Control"] = "no-store"
    return response


def _refusal(request: HttpRequest) -> HttpResponse | None:
    """401 or 403 for a caller that may not scrape, else None."""
    token = settings.ATLASO_METRICS_TOKEN
    if token:
        sent = request.headers.get("Authorization", "")
        if hmac.compare_digest(sent.encode(), f"Bearer {token}".encode()):
            return None
        response = HttpResponse(
            "/metrics needs Authorization: Bearer <ATLASO_METRICS_TOKEN>\n",
            status=401,
            content_type="text/plain; charset=utf-8",
        )
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    if _is_loopback(request.META.get("REMOTE_ADDR", "")):
        return None
    return HttpResponse(
        "/metrics is read from this host only; set ATLASO_METRICS_TOKEN to scrape it from elsewhere\n",
        status=403,
        content_type="text/plain; charset=utf-8",
    )


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def exposition() -> bytes:
    """Every process's figures when they share a folder (else this process's), then the database's."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        processes = CollectorRegistry()
        multiprocess.MultiProcessCollector(processes)
    else:
        processes = REGISTRY
    store = CollectorRegistry()
    store.register(StoreCollector())
    return generate_latest(processes) + generate_latest(store)


class StoreCollector(Collector):
    """What the deployment is, read at each scrape: `/readyz`'s checks, then what the store holds.

    The readiness checks come first so that Prometheus alone can alert on them; what the database
    holds follows when it answered.
    """

    def collect(self) -> Iterator[Metric]:
        checks = readiness()
        ready = GaugeMetricFamily("atlaso_ready", "1 when every readiness check passes (as /readyz), else 0.")
        ready.add_metric([], float(all(check.state == OK for check in checks.values())))
        yield ready
        each = GaugeMetricFamily(
            "atlaso_readiness_check",
            "1 when the readiness check passes, else 0 (as /readyz).",
            labels=["check"],
        )
        for name, check in checks.items():
            each.add_metric([name], float(check.state == OK))
        yield each
        if checks["database"].state != OK:
            return
        try:
            figures = list(_store_figures())
        except Exception as error:  # the database went away meanwhile: the rest still goes out
            logger.warning("metrics: the database's figures could not be read (%s)", type(error).__name__)
            return
        yield from figures


def _store_figures() -> Iterator[Metric]:
    now = timezone.now()
    open_count, oldest = open_conflicts_now()
    conflicts = GaugeMetricFamily("atlaso_open_conflicts", "Bags in conflict now, across every owner.")
    conflicts.add_metric([], open_count)
    yield conflicts
    age = GaugeMetricFamily(
        "atlaso_oldest_open_conflict_age_seconds",
        "How long the oldest open conflict has been open (0 when none is).",
    )
    age.add_metric([], (now - oldest).total_seconds() if oldest is not None else 0.0)
    yield age
    last = GaugeMetricFamily(
        "atlaso_job_last_success_timestamp_seconds",
        "When each job's last successful run ended (Unix time).",
        labels=["job"],
    )
    for job, finished in sorted(job_last_successes().items()):
        last.add_metric([job], finished.timestamp())
    yield last
    unfinished = GaugeMetricFamily(
        "atlaso_job_runs_unfinished",
        "Job runs not finished now, by job and reported status (queued, running, lost, stalled).",
        labels=["job", "status"],
    )
    for (job, status), n in sorted(job_runs_unfinished(now=now).items()):
        unfinished.add_metric([job, status], n)
    yield unfinished
    yield from _embedding_figures()


def _embedding_figures() -> Iterator[Metric]:
    """The embedding backlog, when recall by meaning is on.

    With no embedder nothing waits, and the series are left out rather than reported as an
    empty backlog.
    """
    status = embedding_status()
    if not status.enabled:
        return
    waiting = GaugeMetricFamily(
        "atlaso_embedding_backlog",
        "Deposits waiting for their vector of the current model (recall finds them by words meanwhile).",
    )
    waiting.add_metric([], status.waiting)
    yield waiting
    age = GaugeMetricFamily(
        "atlaso_embedding_backlog_oldest_age_seconds",
        "How long the deposit that has waited longest for its vector has waited (0 when none waits).",
    )
    age.add_metric([], status.oldest_wait_seconds or 0.0)
    yield age

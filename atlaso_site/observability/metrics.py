"""The Prometheus series every process writes (the web workers, the Celery worker, commands).

Under `atlaso_site.supervisor` (and gunicorn started alone, by its config) `PROMETHEUS_MULTIPROC_DIR`
names a folder the web workers and the Celery worker share: each process writes its figures
to files of its own there and `/metrics` sums them (prometheus-client's multiprocess mode),
so a scrape answered by either web worker shows the whole host, the worker's jobs included.
Without the folder each process counts alone (tests, `runserver`).

The figures that are state rather than events (open conflicts, the oldest one's age, each
job's last success, unfinished runs) are read from the database when scraped
(`atlaso_site.observability.exposition`), so every web worker reports the same.

Every label takes values from a small fixed set: a route's template, never its path; an
outcome, a job's name, a status. No owner, user id or content is ever a label value.
"""

from __future__ import annotations

import os

from prometheus_client import Counter, Gauge, Histogram

from atlaso_site.lib.errors import GATE_REJECTED

# Request latency, seconds: a cached read is a few ms, a bulk of 1,000 about a second.
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# Recall's targets are p50 ≤ 30 ms and p99 ≤ 120 ms (operations.md): buckets at both.
RECALL_BUCKETS = (0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.12, 0.2, 0.3, 0.5, 1.0, 2.5)
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

# A write's outcomes: each deposit a write committed, replayed (its idempotency key seen within
# 24 h), refused at the gate, or refused otherwise (a bad field, no permission, a key conflict).
# (A gate refusal is counted under its error code, `gate_rejected`.)
COMMITTED = "committed"
DUPLICATE = "duplicate"
REFUSED = "refused"
WRITE_OUTCOMES = (COMMITTED, DUPLICATE, GATE_REJECTED, REFUSED)

# A folder named but not made yet is made: each series below opens its process's file there.
if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    os.makedirs(os.environ["PROMETHEUS_MULTIPROC_DIR"], exist_ok=True)

REQUESTS = Counter(
    "atlaso_http_requests",
    "HTTP requests answered, by route template, method and status.",
    ["route", "method", "status"],
)
REQUEST_SECONDS = Histogram(
    "atlaso_http_request_duration_seconds",
    "Time to answer an HTTP request (from its headers read to its answer made), by route template and method.",
    ["route", "method"],
    buckets=REQUEST_BUCKETS,
)
IN_PROGRESS = Gauge(
    "atlaso_http_requests_in_progress",
    "HTTP requests being answered now.",
    multiprocess_mode="livesum",
)
RECALL_SECONDS = Histogram(
    "atlaso_recall_duration_seconds",
    "Time to answer a recall that succeeded, by ranking mode.",
    ["mode"],
    buckets=RECALL_BUCKETS,
)
WRITES = Counter(
    "atlaso_writes",
    "Deposits sent to the API's write operations (add, contradict, each item of a bulk), by outcome.",
    ["outcome"],
)
JOB_RUNS = Counter(
    "atlaso_job_runs_finished",
    "Job runs that ended, by job and how they ended (succeeded, failed, skipped).",
    ["job", "status"],
)
LOGIN_FAILURES = Counter(
    "atlaso_login_failures",
    "Failed dashboard and admin logins (wrong password, unknown name, or locked out).",
)


for _outcome in WRITE_OUTCOMES:
    WRITES.labels(outcome=_outcome)  # each outcome's series is there, at 0, before its first write


def method_label(method: str | None) -> str:
    """A request's method as a label: any other than the standard ones is `other`."""
    return method if method in METHODS else "other"


def count_writes(outcomes: dict[str, int]) -> None:
    """Add a write's deposits to their outcomes' counters."""
    for outcome, n in outcomes.items():
        if n:
            WRITES.labels(outcome=outcome).inc(n)


def count_job_run(job: str, status: str) -> None:
    """Count a job run that ended."""
    JOB_RUNS.labels(job=job, status=status).inc()

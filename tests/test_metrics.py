"""/metrics in one process: who may read it, and the series a known sequence of requests moves.

(The same across two gunicorn workers and the Celery worker: tests/faults/test_watching.py.)
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from django.test import Client, override_settings
from django.utils import timezone

from atlaso_site.job_runs.services import process_beat
from tests.conftest import ApiClient, make_client
from tests.scrape import moved, samples, series

pytestmark = pytest.mark.django_db

SCOPE = {"model": "gpt-5", "env": "prod"}


def claim(content: str, polarity: str = "positive", **more: object) -> dict[str, object]:
    return {"content": content, "polarity": polarity, "evidence_grade": "observed", "scope": SCOPE, **more}


def scrape(**extra: str) -> dict:
    response = Client().get("/metrics", **extra)
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    return samples(response.content.decode())


def test_it_is_refused_to_a_caller_off_this_host_when_no_token_is_set():
    refused = Client().get("/metrics", REMOTE_ADDR="203.0.113.9")
    assert refused.status_code == 403
    assert b"atlaso_" not in refused.content and b"ATLASO_METRICS_TOKEN" in refused.content
    assert Client().get("/metrics", REMOTE_ADDR="::1").status_code == 200


@override_settings(ATLASO_METRICS_TOKEN="s3cret-scrape-token")
def test_with_a_token_set_only_the_token_reads_it_wherever_it_comes_from():
    for headers in (
        {},
        {"HTTP_AUTHORIZATION": "Bearer wrong"},
        {"HTTP_AUTHORIZATION": "s3cret-scrape-token"},
    ):
        for address in ("127.0.0.1", "203.0.113.9"):
            refused = Client().get("/metrics", REMOTE_ADDR=address, **headers)
            assert refused.status_code == 401, (headers, address)
            assert refused["WWW-Authenticate"].startswith("Bearer")
            assert b"atlaso_" not in refused.content
    text = scrape(REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer s3cret-scrape-token")
    assert series("atlaso_readiness_check", check="database") in text


def test_writes_are_counted_by_outcome_and_recalls_timed_each_once(api: ApiClient):
    before = scrape()
    assert (
        api.post(
            "/users/alice/deposits", claim("threshold 0.7 holds"), headers={"Idempotency-Key": "k1"}
        ).status
        == 201
    )
    assert (
        api.post(
            "/users/alice/deposits", claim("threshold 0.7 holds"), headers={"Idempotency-Key": "k1"}
        ).status
        == 200
    )
    broad = {
        "content": "works everywhere",
        "polarity": "positive",
        "evidence_grade": "anecdotal",
        "scope": {"model": "m"},
    }
    rejected = api.post("/users/alice/deposits", broad)
    assert (rejected.status, rejected.body["error"]["code"]) == (422, "gate_rejected")
    assert api.post("/users/alice/deposits", {**claim("x"), "polarity": "sideways"}).status == 422
    items = [
        {**claim("bulk one"), "idempotency_key": "b1"},
        {**claim("threshold 0.7 holds"), "idempotency_key": "k1"},  # the single add's key: a replay
        {**broad, "idempotency_key": "b3"},
        {**claim(" \u200b "), "idempotency_key": "b4"},  # blank: refused alone
    ]
    bulk = api.post("/users/alice/deposits/bulk", {"items": items})
    assert (bulk.status, bulk.body["total"]) == (200, 4), bulk.body
    for q in ("threshold", "bulk"):
        assert api.get(f"/users/alice/recall?q={q}").status == 200
    after = scrape()

    writes = {dict(labels)["outcome"]: n for labels, n in moved(before, after, "atlaso_writes_total").items()}
    assert writes == {"committed": 2, "duplicate": 2, "gate_rejected": 2, "refused": 2}
    assert moved(before, after, "atlaso_recall_duration_seconds_count") == {frozenset({("mode", "words")}): 2}
    requests = moved(before, after, "atlaso_http_requests_total")
    route = "api/v1/users/<user_id>/deposits"
    assert requests[frozenset({("route", route), ("method", "POST"), ("status", "201")})] == 1
    assert requests[frozenset({("route", route), ("method", "POST"), ("status", "422")})] == 2
    assert requests[frozenset({("route", route + "/bulk"), ("method", "POST"), ("status", "200")})] == 1


def test_no_label_holds_a_user_id_a_path_or_an_unbounded_method():
    api = make_client(prefix="tenant-")
    api.get("/users/tenant-zoe-8812/recall?q=anything")
    api.get("/users/tenant-zoe-8812/deposits/not-a-uuid")
    Client().generic("BREW", "/api/v1/users/tenant-zoe-8812/deposits")
    Client().get("/no/such/page/tenant-zoe-8812/")
    text = Client().get("/metrics").content.decode()
    assert "tenant-zoe-8812" not in text and "BREW" not in text
    labels = {dict(key[1]).get("route") for key in samples(text)} - {None}
    assert "api/v1/users/<user_id>/recall" in labels and "unmatched" in labels
    assert all("zoe" not in route for route in labels)


def test_a_failed_login_is_counted():
    before = scrape()
    Client().post("/accounts/login/", {"username": "nobody", "password": "wrong-password"})
    assert moved(before, scrape(), "atlaso_login_failures_total") == {frozenset(): 1}


def test_the_embedding_backlog_is_what_waits_for_a_vector_and_recall_is_timed_by_the_ranking_that_answered(
    api: ApiClient, settings, local_embedder
):
    from deposits.services.embedding import deposits_embed

    backlog = series("atlaso_embedding_backlog")
    oldest = series("atlaso_embedding_backlog_oldest_age_seconds")
    assert scrape()[backlog] == 0
    for content in ("I'm vegan", "she runs every morning"):
        assert api.post("/users/alice/deposits", {"content": content}).status == 201
    waiting = scrape()
    assert waiting[backlog] == 2 and waiting[oldest] > 0
    deposits_embed()
    embedded = scrape()
    assert (embedded[backlog], embedded[oldest]) == (0, 0)
    # Recall is timed by the ranking that answered it.
    for mode in ("hybrid", "meaning", "words"):
        assert api.get(f"/users/alice/recall?q=what+does+she+eat&mode={mode}").status == 200
    assert api.get("/users/alice/recall?q=what+does+she+eat").status == 200  # hybrid, the default
    timed = moved(embedded, scrape(), "atlaso_recall_duration_seconds_count")
    assert timed == {
        frozenset({("mode", "hybrid")}): 2, frozenset({("mode", "meaning")}): 1, frozenset({("mode", "words")}): 1
    }  # fmt: skip
    settings.ATLASO_EMBEDDER = "none"
    assert not {backlog, oldest} & scrape().keys()


@override_settings(ATLASO_METRICS=False)
def test_switched_off_there_is_no_metrics_endpoint():
    assert Client().get("/metrics").status_code == 404
    assert Client().get("/healthz").status_code == 200


def test_the_readiness_checks_are_series_too_so_prometheus_alone_can_alert_on_them():
    text = scrape()
    assert text[series("atlaso_ready")] == 0  # no worker or beat has beaten here
    assert text[series("atlaso_readiness_check", check="database")] == 1
    assert text[series("atlaso_readiness_check", check="worker")] == 0
    process_beat(role="worker", node="celery@a", at=timezone.now())
    assert scrape()[series("atlaso_readiness_check", check="worker")] == 1


def test_a_worker_only_machines_figures_are_served_by_the_exporter(tmp_path):
    """Two processes count job runs into one folder; the exporter serves their sum."""
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    count = "from atlaso_site.observability.metrics import count_job_run; count_job_run('verify_beliefs', 'failed')"
    for _ in range(2):
        subprocess.run([sys.executable, "-c", count], env=env, check=True, timeout=60)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    exporter = subprocess.Popen(
        [sys.executable, "-m", "atlaso_site.observability.exporter", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
                break
            except OSError:
                assert time.monotonic() < deadline and exporter.poll() is None
                time.sleep(0.1)
    finally:
        exporter.terminate()
        exporter.wait(timeout=10)
    assert samples(text)[series("atlaso_job_runs_finished_total", job="verify_beliefs", status="failed")] == 2

"""Watching it run, against the processes `make run` starts.

/metrics summed across two gunicorn workers and the Celery worker, /readyz through outages of
PostgreSQL, Redis and the worker, a request id from the client to its job's log line in JSON, and
OpenTelemetry's spans.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from http.client import HTTPConnection
from pathlib import Path

import pytest
from prometheus_client.mmap_dict import MmapedDict

from tests.faults.keys import make_keys
from tests.faults.otlp import SERVER, Receiver, Span
from tests.faults.processes import Atlaso, ThrowawayPostgres, ThrowawayRedis, wait_for
from tests.scrape import moved, samples

SCOPE = {"model": "gpt-5", "env": "prod"}
RECALL_ROUTE = "api/v1/users/<user_id>/recall"
RECALL_SPAN = "GET " + RECALL_ROUTE


def claim(content: str, polarity: str = "positive") -> dict[str, object]:
    return {"content": content, "polarity": polarity, "evidence_grade": "observed", "scope": SCOPE}


def get(atlaso: Atlaso, path: str, *, timeout: float = 10) -> tuple[int, bytes]:
    """A GET outside the API (/metrics, /readyz) on a fresh connection."""
    connection = HTTPConnection("127.0.0.1", atlaso.port, timeout=timeout)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def scrape(atlaso: Atlaso) -> dict:
    status, body = get(atlaso, "/metrics")
    assert status == 200, body[:300]
    return samples(body.decode())


def children(pid: int) -> set[int]:
    """The processes whose parent is `pid`."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def counted_by_process(folder: Path, metric: str, **labels: str) -> dict[int, float]:
    """A counter's value in each process's own file of the metrics folder, by pid."""
    by_pid = {}
    for path in folder.glob("counter_*.db"):
        pid = int(path.stem.split("_")[1])
        for key, value, _, _ in MmapedDict.read_all_values_from_file(str(path)):
            name, _, found, _ = json.loads(key)
            if name == metric and labels.items() <= found.items() and value:
                by_pid[pid] = by_pid.get(pid, 0.0) + value
    return by_pid


def test_metrics_move_by_exactly_what_was_done_summed_over_two_web_workers_and_the_celery_worker(
    atlaso: Atlaso, redis: ThrowawayRedis, capsys: pytest.CaptureFixture[str]
):
    atlaso.redis_url = redis.url
    agent, admin = make_keys(atlaso)
    atlaso.start_web()
    worker = atlaso.start_worker(pool="prefork")
    web_workers = children(atlaso.processes["web"].pid)
    assert len(web_workers) == 2, web_workers
    before = scrape(atlaso)

    def add(body: dict, key: str | None = None) -> int:
        headers = {"Idempotency-Key": key} if key else None
        return atlaso.call("POST", "/users/alice/deposits", body, key=agent, headers=headers).status

    assert [add(claim(f"threshold {n} holds"), f"k{n}") for n in range(3)] == [201, 201, 201]
    assert add(claim("threshold 0 holds"), "k0") == 200  # a replay
    assert add({**claim("works everywhere"), "evidence_grade": "anecdotal", "scope": {"model": "m"}}) == 422
    assert add({**claim("x"), "polarity": "sideways"}) == 422
    wrong = atlaso.call("POST", "/users/alice/deposits", claim("threshold 0 fails", "negative"), key=agent)
    assert wrong.status == 201
    in_conflict = scrape(atlaso)
    assert moved(before, in_conflict, "atlaso_open_conflicts") == {frozenset(): 1}
    assert in_conflict[("atlaso_oldest_open_conflict_age_seconds", frozenset())] > 0
    fix = {
        **claim("threshold 0 holds, re-measured"),
        "contradicts": [wrong.body["deposit"]["id"]],
        "reason": "re-run",
    }
    assert atlaso.call("POST", "/users/alice/contradict", fix, key=agent).status == 201

    # Recalls, concurrently, until each web worker has answered some.
    recalls = 0
    folder = atlaso.folder / "metrics"
    with ThreadPoolExecutor(8) as pool:
        for _ in range(10):
            statuses = list(
                pool.map(
                    lambda _: atlaso.call("GET", "/users/alice/recall?q=threshold", key=agent).status,
                    range(8),
                )
            )
            assert statuses == [200] * 8
            recalls += 8
            answered = counted_by_process(folder, "atlaso_http_requests", route=RECALL_ROUTE, status="200")
            if web_workers <= answered.keys():
                break
    assert web_workers <= answered.keys(), answered

    # Two jobs in the Celery worker's pool process: one that fails (a run of a job this version
    # does not have, as a run left by another version would be), one that succeeds.
    failed = atlaso.django(
        "from atlaso_site.job_runs.services import job_enqueue\n"
        "result = str(job_enqueue(name='retired_job', trigger='api').pk)"
    )
    succeeded = atlaso.call("POST", "/jobs/expire_idempotency_keys/runs", key=admin).body["id"]
    assert atlaso.wait_for_run(failed, admin)["status"] == "failed"
    assert atlaso.wait_for_run(succeeded, admin)["status"] == "succeeded"
    after = scrape(atlaso)

    def by(name: str, label: str) -> dict[str, float]:
        return {dict(labels)[label]: n for labels, n in moved(before, after, name).items()}

    assert by("atlaso_writes_total", "outcome") == {
        "committed": 5,
        "duplicate": 1,
        "gate_rejected": 1,
        "refused": 1,
    }
    assert by("atlaso_recall_duration_seconds_count", "mode") == {"words": recalls}
    assert moved(before, after, "atlaso_job_runs_finished_total") == {
        frozenset({("job", "retired_job"), ("status", "failed")}): 1,
        frozenset({("job", "expire_idempotency_keys"), ("status", "succeeded")}): 1,
    }
    assert moved(in_conflict, after, "atlaso_open_conflicts") == {frozenset(): -1}
    assert after[("atlaso_oldest_open_conflict_age_seconds", frozenset())] == 0
    assert (
        "atlaso_job_last_success_timestamp_seconds",
        frozenset({("job", "expire_idempotency_keys")}),
    ) in after
    requests = moved(before, after, "atlaso_http_requests_total")
    assert requests[frozenset({("route", RECALL_ROUTE), ("method", "GET"), ("status", "200")})] == recalls
    # Each process counted in its own file, and the scrape summed them.
    pool_processes = children(worker.pid)
    jobs = counted_by_process(folder, "atlaso_job_runs_finished")
    assert jobs.keys() <= pool_processes and sum(jobs.values()) == 2, (jobs, pool_processes)
    with capsys.disabled():
        print(
            f"\n[metrics] recalls answered by web worker: {answered}; job runs ended by pool process: {jobs}"
        )


def poll_readiness(
    atlaso: Atlaso, until: Callable[[int], bool], *, timeout: float, times: int = 1
) -> tuple[int, dict, float]:
    """Poll /readyz once a second until its status satisfies `until` `times` polls in a row.

    Returns the status, the body and the seconds until the first of those polls.
    """
    started = time.monotonic()
    run_began: float | None = None
    run = 0
    while True:
        polled = time.monotonic()
        try:
            status, body = get(atlaso, "/readyz", timeout=5)
        except OSError:
            status, body = 0, b"{}"
        if until(status):
            run_began = polled if run == 0 else run_began
            run += 1
            if run >= times:
                return status, json.loads(body), run_began - started
        else:
            run = 0
        assert time.monotonic() - started < timeout, f"/readyz stayed {status}: {body[:800]!r}"
        time.sleep(max(0.0, 1.0 - (time.monotonic() - polled)))


def failing(body: dict) -> set[str]:
    return {name for name, check in body["checks"].items() if check["state"] != "ok"}


def test_readyz_fails_within_a_poll_of_each_outage_and_recovers_when_it_ends(
    atlaso: Atlaso, cluster: ThrowawayPostgres, redis: ThrowawayRedis, capsys: pytest.CaptureFixture[str]
):
    atlaso.redis_url = redis.url
    # Heartbeats every half second, stale after three (the defaults are 10 and 60).
    atlaso.extra_env.update(PROCESS_HEARTBEAT_SECONDS="0.5", PROCESS_HEARTBEAT_STALE_SECONDS="3")
    atlaso.start_web()
    atlaso.start_worker()
    atlaso.start_beat()
    _, body, _ = poll_readiness(atlaso, lambda s: s == 200, timeout=30, times=3)
    assert failing(body) == set()
    took: dict[str, tuple[float, float]] = {}

    cluster.stop()
    try:
        _, body, down = poll_readiness(atlaso, lambda s: s == 503, timeout=3)
        assert {"database", "migrations", "worker", "beat"} <= failing(body) and "broker" not in failing(body)
    finally:
        cluster.start()
    # Back when eight polls in a row say so: either web worker may answer a poll, and each
    # worker's pool reconnects on its own.
    _, body, up = poll_readiness(atlaso, lambda s: s == 200, timeout=30, times=8)
    took["PostgreSQL stopped"] = (down, up)

    redis.kill()
    _, body, down = poll_readiness(atlaso, lambda s: s == 503, timeout=2)
    # (beat may miss a tick too, if it tried to send a task meanwhile)
    assert "broker" in failing(body) and not {"database", "worker"} & failing(body), body
    redis.start()
    _, _, up = poll_readiness(atlaso, lambda s: s == 200, timeout=30, times=5)
    took["Redis killed"] = (down, up)

    atlaso.kill("worker")
    _, body, down = poll_readiness(atlaso, lambda s: s == 503, timeout=3 + 2)
    assert failing(body) == {"worker"}, body
    assert body["checks"]["worker"]["error"].startswith("last heartbeat")
    atlaso.start_worker()
    _, _, up = poll_readiness(atlaso, lambda s: s == 200, timeout=30, times=5)
    took["worker killed"] = (down, up)
    with capsys.disabled():
        print(
            "\n[readyz] outage: seconds to the first 503; once it ended, to the first of 8 (PostgreSQL) or 5 200s in a row"
        )
        for what, (down, up) in took.items():
            print(f"  {what:<20} {down:5.1f} s   {up:5.1f} s")


def json_lines(text: str) -> list[dict]:
    """The log's JSON lines (a Celery banner and warnings printed to stderr are not log lines)."""
    found = []
    for line in text.splitlines():
        if line.startswith("{"):
            found.append(json.loads(line))
    return found


def descends_from(span: Span, ancestor: Span, spans: list[Span]) -> bool:
    by_id = {s.span_id: s for s in spans}
    seen = span
    while seen.parent_id:
        if seen.parent_id == ancestor.span_id:
            return True
        seen = by_id.get(seen.parent_id)
        if seen is None:
            return False
    return False


def test_a_request_id_reaches_the_envelope_the_web_log_and_its_jobs_log_and_spans_are_linked(
    atlaso: Atlaso, redis: ThrowawayRedis
):
    receiver = Receiver()
    endpoint = receiver.start()
    atlaso.redis_url = redis.url
    atlaso.extra_env.update(
        LOG_FORMAT="json",
        OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
        OTEL_SERVICE_NAME="atlaso-faults",
        OTEL_BSP_SCHEDULE_DELAY="100",
    )
    try:
        agent, admin = make_keys(atlaso)
        atlaso.start_web()
        atlaso.start_worker(pool="prefork")

        refused = atlaso.call("POST", "/users/alice/deposits", {"content": "x", "polarity": "sideways"},
                              key=agent, headers={"X-Request-ID": "client-req-A1"})  # fmt: skip
        assert refused.status == 422 and refused.headers["x-request-id"] == "client-req-A1"
        assert refused.body["error"]["request_id"] == "client-req-A1"
        changed = atlaso.call("PUT", "/tiers/agent_own", {"ceiling": 0.4}, key=admin,
                              headers={"X-Request-ID": "client-req-B2"})  # fmt: skip
        assert changed.status == 200, changed.body
        run = atlaso.wait_for_run(changed.body["rebuild"]["id"], admin)
        assert run["status"] == "succeeded"
        assert (
            atlaso.call("POST", "/users/alice/deposits", claim("threshold 0.7 holds"), key=agent).status
            == 201
        )
        assert (
            atlaso.call(
                "GET", "/users/alice/recall?q=threshold", key=agent, headers={"X-Request-ID": "client-req-C3"}
            ).status
            == 200
        )
        # Ids no log may hold as given: 10 kB (gunicorn refuses the header: 431), control characters.
        for sent in ("a" * 10_000, "abc\x01\x1b[2Jdef", "abc def"):
            answer = atlaso.call("GET", "/tiers", key=agent, headers={"X-Request-ID": sent})
            assert answer.status in (200, 400, 431) and answer.headers["x-request-id"] != sent
            assert len(answer.headers["x-request-id"]) == 32

        web = json_lines(atlaso.log("web"))
        # One line for the request: Django's, for a refusal, with the request's fields.
        (line,) = [r for r in web if r.get("request_id") == "client-req-A1"]
        assert (line["status"], line["route"], line["key"]) == (
            422,
            "api/v1/users/<user_id>/deposits",
            "agent",
        )
        assert {"time", "level", "logger", "message", "method", "duration_ms", "login"} <= line.keys()
        jobs = [r for r in json_lines(atlaso.log("worker")) if r.get("request_id") == "client-req-B2"]
        assert any(f"job run {run['id']} (rebuild_beliefs) succeeded" in r["message"] for r in jobs), jobs
        raw = atlaso.log("web") + atlaso.log("worker")
        assert "a" * 200 not in raw and "\x1b[2J" not in raw and "abc def" not in raw

        def server_span(name: str, spans: list[Span]) -> Span:
            matches = [s for s in spans if s.kind == SERVER and s.name == name]
            assert len(matches) == 1, sorted({s.name for s in spans})
            return matches[0]

        # The recall: its request span, with its SQL queries as children.
        def recall_seen(spans: list[Span]) -> bool:
            return any(s.kind == SERVER and s.name == RECALL_SPAN for s in spans)

        spans = wait_for(receiver.received, recall_seen, timeout=20, what="the recall's span")
        recall = server_span(RECALL_SPAN, spans)
        queries = [
            s
            for s in spans
            if s.parent_id == recall.span_id
            and s.attributes.get("db.system", s.attributes.get("db.system.name")) == "postgresql"
        ]
        assert queries, [(s.name, s.parent_id) for s in spans if s.trace_id == recall.trace_id]
        assert recall.service == "atlaso-faults"

        # The tier change: its request span, the task it sent, and the task's run in the worker.
        # Each process exports its spans in batches of its own: the worker's may arrive first.
        def both_seen(spans: list[Span]) -> bool:
            return any(s.name.startswith("run/") and "run_job" in s.name for s in spans) and any(
                s.kind == SERVER and s.name == "PUT api/v1/tiers/<name>" for s in spans
            )

        spans = wait_for(
            receiver.received, both_seen, timeout=20, what="the tier change's and its task's spans"
        )
        tier_change = server_span("PUT api/v1/tiers/<name>", spans)
        (task_run,) = [
            s
            for s in spans
            if s.name.startswith("run/") and "run_job" in s.name and s.trace_id == tier_change.trace_id
        ]
        assert descends_from(task_run, tier_change, spans), [
            (s.name, s.span_id, s.parent_id) for s in spans if s.trace_id == tier_change.trace_id
        ]
    finally:
        receiver.stop()

"""`/jobs/`: each job's runs, rows that follow a live run, and starting a job (operators only)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from atlaso_site.job_runs.models import JobRun
from tests.diagnostics.dashboard import XSS, logged_in, run

pytestmark = pytest.mark.django_db

STARTABLE = ("recompute_diagnostics", "verify_beliefs", "expire_idempotency_keys", "embed_deposits")


def row(html: str, job_run: JobRun) -> str:
    return re.search(rf'<tr id="run-{job_run.pk}".*?</tr>', html, re.S).group(0)


def test_each_job_lists_its_runs_with_status_trigger_progress_counts_duration_and_error():
    done = run(
        "recompute_diagnostics",
        trigger="beat",
        done=40,
        total=40,
        counts={"owners": 39, "snapshots": 40},
        started_at=timezone.now() - timedelta(seconds=90),
        finished_at=timezone.now(),
    )
    failed = run("expire_idempotency_keys", status="failed", error=f"OperationalError: {XSS}")
    html = logged_in("reviewer").get("/jobs/").content.decode()
    for name in ("recompute_diagnostics", "expire_idempotency_keys", "rebuild_beliefs", "verify_beliefs"):
        assert f"<code>{name}</code>" in html
    ok = row(html, done)
    assert '<a class="status succeeded"' in ok and '<td data-label="Trigger">beat</td>' in ok
    assert 'aria-valuenow="40"' in ok and "40 / 40" in ok
    assert "owners 39" in ok and "snapshots 40" in ok and "1 minute" in ok
    assert "hx-trigger" not in ok
    bad = row(html, failed)
    assert 'class="run alarm"' in bad and "OperationalError: &lt;script&gt;" in bad
    assert "<script>" not in html
    assert "No run yet." in html  # rebuild_beliefs


@pytest.mark.parametrize(
    ("status", "minutes_ago", "reported", "polls"),
    [
        ("queued", 1, "queued", True),
        ("running", 1, "running", True),
        ("queued", 30, "stalled", False),
        ("running", 30, "lost", False),
        ("skipped", 1, "skipped", False),
    ],
)
def test_a_run_shows_its_reported_status_and_only_a_live_one_polls(status, minutes_ago, reported, polls):
    live = run(
        "verify_beliefs", status=status, at=timezone.now() - timedelta(minutes=minutes_ago), done=3, total=10
    )
    html = row(logged_in("reviewer").get("/jobs/").content.decode(), live)
    assert f'<a class="status {reported}" href="/jobs/runs/{live.pk}/"' in html and f">{reported}</a>" in html
    assert ('hx-trigger="every 2s"' in html) is polls
    assert (f'hx-get="/jobs/runs/{live.pk}/"' in html) is polls
    assert ("alarm" in html) is (reported in ("lost", "stalled"))


def test_a_polled_row_comes_back_alone_and_stops_polling_once_the_run_ends():
    live = run("recompute_diagnostics", status="running", done=1, total=4)
    reviewer = logged_in("reviewer")
    fragment = reviewer.get(f"/jobs/runs/{live.pk}/", headers={"HX-Request": "true"}).content.decode()
    assert fragment.strip().startswith(f'<tr id="run-{live.pk}"') and 'hx-trigger="every 2s"' in fragment
    assert "1 / 4" in fragment
    JobRun.objects.filter(pk=live.pk).update(status="succeeded", done=4, finished_at=timezone.now())
    ended = reviewer.get(f"/jobs/runs/{live.pk}/", headers={"HX-Request": "true"}).content.decode()
    assert "4 / 4" in ended and "succeeded" in ended and "hx-trigger" not in ended


def test_a_run_has_a_page_of_its_own_and_an_unknown_run_is_a_404():
    done = run("verify_beliefs")
    reviewer = logged_in("reviewer")
    page = reviewer.get(f"/jobs/runs/{done.pk}/").content.decode()
    assert "<h1>Run of <code>verify_beliefs</code></h1>" in page and str(done.pk) in page
    for unknown in ("not-a-uuid", "00000000-0000-0000-0000-000000000000"):
        assert reviewer.get(f"/jobs/runs/{unknown}/").status_code == 404


def test_an_operator_sees_a_start_button_for_each_job_it_may_start_and_a_reviewer_none():
    operator = logged_in("operator").get("/jobs/").content.decode()
    buttons = re.findall(r'<form method="post" action="/jobs/(\w+)/start/">', operator)
    assert sorted(buttons) == sorted(STARTABLE)
    for name in STARTABLE:
        assert f">Start {name}</button>" in operator
    reviewer = logged_in("reviewer").get("/jobs/").content.decode()
    assert "/start/" not in reviewer and "<button" not in reviewer.split("</header>", 1)[1]


@pytest.mark.parametrize("name", STARTABLE)
def test_an_operator_starts_a_run_through_the_runner_with_trigger_dashboard(
    name, django_capture_on_commit_callbacks
):
    operator = logged_in("operator")
    with django_capture_on_commit_callbacks() as dispatched:
        response = operator.post(f"/jobs/{name}/start/")
    assert response.status_code == 302 and response.url == "/jobs/"
    started = JobRun.objects.get()
    assert (started.name, started.trigger, started.status) == (name, "dashboard", "queued")
    assert len(dispatched) == 1  # handed to a worker once the transaction commits
    page = operator.get("/jobs/").content.decode()
    assert f"Started {name}: run {started.pk} is queued" in page
    assert 'hx-trigger="every 2s"' in row(page, started)


def test_a_reviewer_is_refused_starting_a_run():
    for name in STARTABLE:
        response = logged_in("reviewer").post(f"/jobs/{name}/start/")
        assert response.status_code == 403
    assert not JobRun.objects.exists()


def test_only_the_listed_jobs_start_from_here_and_only_by_post():
    operator = logged_in("operator")
    assert operator.post("/jobs/rebuild_beliefs/start/").status_code == 404
    assert operator.post("/jobs/nonsense/start/").status_code == 404
    assert operator.get("/jobs/verify_beliefs/start/").status_code == 405
    assert not JobRun.objects.exists()


def test_the_page_reads_in_a_fixed_number_of_queries(django_assert_max_num_queries):
    reviewer = logged_in("reviewer")
    for _ in range(12):
        for name in STARTABLE:
            run(name)
    with django_assert_max_num_queries(4):
        assert reviewer.get("/jobs/").status_code == 200


def test_a_verify_run_says_its_mismatches_once_and_names_them():
    clean = run("verify_beliefs", counts={"checked": 3, "mismatched": 0, "mismatches": []})
    html = logged_in("reviewer").get("/jobs/").content.decode()
    cell = re.search(r'data-label="Counts"[^>]*>(.*?)</td>', row(html, clean), re.S).group(1)
    assert re.sub(r"<[^>]+>", "", cell).strip() == "checked 3; mismatches none"
    found = run(
        "verify_beliefs", counts={"checked": 3, "mismatched": 1, "mismatches": [["alice", "diet:milk"]]}
    )
    html = logged_in("reviewer").get("/jobs/").content.decode()
    assert "mismatched" not in row(html, found) and "mismatches 1: alice/diet:milk" in row(html, found)

"""The overview, health trends, owners and job runs in a real browser: charts, and a run followed live."""

from __future__ import annotations

import re
from datetime import timedelta

from django.utils import timezone
from playwright.sync_api import Page, expect

from atlaso_site.job_runs.models import JobRun
from atlaso_site.job_runs.services import job_claim, job_record
from beliefs.services import belief_confirm
from tests.diagnostics.dashboard import belief, conflict, run, snapshots
from tests.e2e.browser import login, screenshot
from tests.e2e.test_owner_page import an_owner_with_history, assert_a_drawn_chart


def a_deployment_with_history() -> None:
    an_owner_with_history()
    conflict("tenant-a:bob")
    snapshots("tenant-a:bob", [70, 72])
    snapshots(None, [41, 44, 50, 55, 60, 63, 68, 71])
    belief("tenant-a:bob", key="language", value="German")
    belief_confirm(user_id="tenant-a:bob", key="language", value="German")
    run("recompute_diagnostics", counts={"owners": 2, "snapshots": 3, "thinned": 0})
    run("verify_beliefs", status="failed", error="RuntimeError: the replay of alice/diet:milk failed")


def test_the_overview_draws_the_trend_and_marks_a_failed_job_in_red(page: Page):
    a_deployment_with_history()
    login(page, "reviewer")
    expect(page.get_by_role("heading", level=1)).to_have_text("Overview")
    assert_a_drawn_chart(page, "#deployment-fmi-last-30-days")
    failed = page.locator("tr.alarm", has_text="verify_beliefs")
    expect(failed.locator(".status.failed")).to_have_text("failed")
    assert failed.evaluate("row => getComputedStyle(row.querySelector('td')).boxShadow").startswith(
        "rgb(180, 35, 24)"
    )
    screenshot(page, "overview")


def test_health_draws_five_lines_with_a_legend_the_backlog_and_the_reliability_diagram(page: Page):
    a_deployment_with_history()
    login(page, "reviewer")
    page.goto("/health/?days=7")
    pillars = page.locator("#fmi-and-its-pillars-last-7-days")
    assert_a_drawn_chart(page, "#fmi-and-its-pillars-last-7-days")
    expect(pillars.locator("svg path.line")).to_have_count(5)
    expect(pillars.locator(".chart-legend li")).to_have_count(5)
    assert_a_drawn_chart(page, "#bags-in-conflict-at-each-snapshot-last-7-days")
    reliability = page.locator("#calibration-stated-probability-against-how-often-it-was-right")
    expect(reliability.locator("svg .bar")).to_have_count(1)
    expect(reliability.locator("svg .diagonal")).to_have_count(1)
    assert reliability.locator("svg .mark").count() + reliability.locator("svg .bar").count() >= 2
    assert reliability.locator("svg .x-axis .axis-label").text_content() == "stated probability"
    screenshot(page, "health")

    page.get_by_label("Owner", exact=True).fill("alice")
    page.get_by_role("button", name="Show").click()
    expect(page).to_have_url(re.compile(r"/health/\?days=7&owner=alice"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Health trends of alice")
    page.get_by_role("link", name="90 days").click()
    expect(page).to_have_url(re.compile(r"days=90&owner=alice"))
    screenshot(page, "health-owner")


def test_owners_are_searched_as_you_type_and_sorted_in_place(page: Page, live_server):
    a_deployment_with_history()
    login(page, "reviewer")
    page.goto("/owners/")
    rows = page.locator("#owners tbody tr")
    expect(rows).to_have_count(2)
    screenshot(page, "owners")
    page.evaluate("window.__stillHere = true")
    page.get_by_label("Owner id starts with").press_sequentially("ten")
    expect(rows).to_have_count(1)
    expect(page).to_have_url(re.compile(r"/owners/\?q=ten"))
    page.get_by_label("Owner id starts with").fill("")
    page.get_by_label("Owner id starts with").press("Backspace")
    expect(rows).to_have_count(2)
    page.get_by_role("link", name="FMI").click()
    expect(page).to_have_url(re.compile(r"sort=-fmi"))
    expect(rows.first).to_contain_text("tenant-a:bob")
    page.get_by_role("link", name="FMI").click()
    expect(page).to_have_url(re.compile(r"sort=fmi"))
    expect(rows.first).to_contain_text("alice")
    assert page.evaluate("window.__stillHere") is True


def test_a_running_jobs_progress_updates_itself_and_polling_stops_when_it_ends(page: Page):
    run("recompute_diagnostics", at=timezone.now() - timedelta(hours=1))
    recorder = job_claim(job_record(name="recompute_diagnostics", trigger="beat").pk)
    recorder.progress(1, 10)
    login(page, "operator")
    polls: list[str] = []
    page.on("request", lambda request: polls.append(request.url) if "/jobs/runs/" in request.url else None)
    page.goto("/jobs/")
    row = page.locator(f"#run-{recorder.run.pk}")
    expect(row.locator(".status")).to_have_text("running")
    expect(row.locator(".done-total")).to_have_text("1 / 10")
    screenshot(page, "jobs-running")

    JobRun.objects.filter(pk=recorder.run.pk).update(done=6, heartbeat_at=timezone.now())
    expect(row.locator(".done-total")).to_have_text("6 / 10", timeout=6000)
    expect(row.locator("[role=progressbar]")).to_have_attribute("aria-valuenow", "6")

    recorder.run.done = 10
    recorder.succeed({"owners": 9, "snapshots": 10})
    expect(row.locator(".status")).to_have_text("succeeded", timeout=6000)
    expect(row).to_contain_text("owners 9")
    expect(row).not_to_have_attribute("hx-trigger", re.compile("every"))
    seen = len(polls)
    page.wait_for_timeout(4500)  # two polling periods and more
    assert len(polls) == seen, "the row kept polling after its run ended"
    screenshot(page, "jobs")

    row.locator(".status").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Run of recompute_diagnostics")
    screenshot(page, "job-run")


def test_an_operator_starts_a_job_and_a_reviewer_has_no_button(page: Page):
    login(page, "reviewer")
    page.goto("/jobs/")
    expect(page.get_by_role("button", name=re.compile("^Start"))).to_have_count(0)
    page.get_by_role("button", name="Log out").click()
    login(page, "operator")
    page.goto("/jobs/")
    page.get_by_role("button", name="Start verify_beliefs").click()
    expect(page.get_by_role("status")).to_contain_text("Started verify_beliefs")
    started = JobRun.objects.get(name="verify_beliefs", trigger="dashboard")
    expect(page.locator(f"#run-{started.pk}")).to_be_visible()

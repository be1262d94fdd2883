"""`/`: the deployment's FMI and trend, the conflict backlog, beliefs, calibration, the last runs."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.diagnostics.dashboard import XSS, belief, conflict, logged_in, run, snapshots

pytestmark = pytest.mark.django_db


@pytest.fixture
def reviewer():
    return logged_in("reviewer")


def test_the_fmi_and_its_pillars_come_from_the_latest_snapshot_with_its_trend(reviewer):
    conflict("alice")
    snapshots(None, [30, 45, 62])
    html = reviewer.get("/").content.decode()
    assert '<span class="fmi-number">' in html
    assert re.search(r"as of the latest snapshot, <time[^>]*>just now</time>", html)
    for pillar in ("Coverage", "Precision", "Resolution", "Density"):
        assert re.search(rf'<dt><a class="term" href="/help/#[a-z-]+">{pillar}</a></dt>', html)
    assert "Deployment FMI, last 30 days" in html and html.count('<circle class="mark"') == 3


def test_before_the_first_snapshot_the_fmi_is_computed_and_the_trend_says_how_it_fills(reviewer):
    conflict("alice")
    html = reviewer.get("/").content.decode()
    assert "now (no snapshot yet)" in html
    assert "Not enough history yet: snapshots are taken every 15 minutes by recompute_diagnostics" in html


def test_the_backlog_names_the_oldest_conflict_and_links_to_the_queue(reviewer):
    conflict("alice")
    conflict("bob")
    html = reviewer.get("/").content.decode()
    assert '<span class="figure-number">2</span> open conflicts' in html
    assert "The oldest opened <time" in html and 'href="/conflicts/"' in html
    assert "nothing resolved in 30 days" in html


def test_uncertain_beliefs_and_calibration_say_how_many_confirmations_are_missing(reviewer):
    conflict("alice")
    belief("alice", key="pet:name", value="Rex", tier="web_fetch")
    html = reviewer.get("/").content.decode()
    assert '<span class="figure-number">1</span> uncertain belief' in html
    assert "30 more confirmations needed before probabilities read as frequencies" in html


def test_the_last_run_of_each_job_with_failed_lost_and_stalled_in_red(reviewer):
    long_ago = timezone.now() - timedelta(minutes=30)
    run("recompute_diagnostics", status="succeeded", at=long_ago)
    run("recompute_diagnostics", status="failed", error=f"RuntimeError: {XSS}")
    run("expire_idempotency_keys", status="running", at=long_ago)  # reported lost
    run("verify_beliefs", status="queued", at=long_ago)  # reported stalled
    html = reviewer.get("/").content.decode()
    rows = {
        name: row
        for row, name in re.findall(
            r'(<tr class="[^"]*">\s*<td data-label="Job" class="nowrap"><code>(\w+)</code>.*?</tr>)',
            html,
            re.S,
        )
    }
    recompute, expire, verify = (
        rows["recompute_diagnostics"],
        rows["expire_idempotency_keys"],
        rows["verify_beliefs"],
    )
    assert 'class="alarm"' in recompute and '<span class="status failed">failed</span>' in recompute
    assert 'class="alarm"' in expire and '<span class="status lost">lost</span>' in expire
    assert 'class="alarm"' in verify and '<span class="status stalled">stalled</span>' in verify
    assert "never ran" in rows["rebuild_beliefs"]
    assert "RuntimeError: &lt;script&gt;" in html and "<script>" not in html
    assert 'href="/jobs/"' in html and "a job needs attention" in html


def test_a_verify_run_that_found_mismatches_is_red_though_it_succeeded(reviewer):
    run(
        "verify_beliefs",
        status="succeeded",
        counts={"checked": 3, "mismatched": 1, "mismatches": ["alice/diet:milk"]},
    )
    html = reviewer.get("/").content.decode()
    row = html.split("<code>verify_beliefs</code>", 1)[0].rsplit("<tr", 1)[1]
    assert 'class="alarm"' in row


def test_the_overview_reads_in_a_fixed_number_of_queries(reviewer, django_assert_max_num_queries):
    conflict("alice")
    snapshots(None, [30, 45])
    for name in ("recompute_diagnostics", "verify_beliefs"):
        run(name)
    with django_assert_max_num_queries(8):
        assert reviewer.get("/").status_code == 200

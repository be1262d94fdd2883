"""`/health/`: FMI and pillar lines, the conflict backlog and calibration, over 7, 30 or 90 days."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from beliefs.services import belief_confirm
from tests.diagnostics.dashboard import XSS, belief, conflict, logged_in, snapshots

pytestmark = pytest.mark.django_db

EMPTY = "Not enough history yet: snapshots are taken every 15 minutes by recompute_diagnostics"


@pytest.fixture
def reviewer():
    return logged_in("reviewer")


@pytest.fixture
def history():
    """Hourly deployment snapshots, and daily ones of alice over 60 days."""
    conflict("alice")
    snapshots(None, [40, 50, 60, 70])
    snapshots("alice", list(range(20, 80)), step=timedelta(days=1))


def legend(html: str) -> list[str]:
    return re.findall(r'<li class="series-\d"><span class="swatch" aria-hidden="true"></span>(\w+) ', html)


def test_the_deployment_over_30_days_by_default_with_five_lines_and_a_legend(reviewer, history):
    html = reviewer.get("/health/").content.decode()
    assert "<h1>Health trends of the deployment</h1>" in html
    assert legend(html) == ["FMI", "coverage", "precision", "resolution", "density"]
    assert html.count('<path class="line"') == 6  # five lines, and the conflict backlog
    assert "FMI and its pillars, last 30 days" in html
    assert '<a href="?days=30" aria-current="true">30 days</a>' in html


def test_the_window_is_7_30_or_90_days(reviewer, history):
    for days in (7, 30, 90):
        html = reviewer.get(f"/health/?days={days}&owner=alice").content.decode()
        assert f"FMI and its pillars, last {days} days" in html
        assert f'<a href="?days={days}&amp;owner=alice" aria-current="true">' in html
    for odd in ("365", "x", "-7"):
        assert "last 30 days" in reviewer.get(f"/health/?days={odd}").content.decode()


def test_one_owners_trend_reads_its_snapshots_inside_the_window(reviewer, history):
    week = reviewer.get("/health/?owner=alice&days=7").content.decode()
    assert '<h1>Health trends of <span class="owner-id">alice</span></h1>' in week
    first_line = week.split('<path class="line" d="', 1)[1].split('"', 1)[0]
    assert first_line.count("V") == 6  # 7 daily points inside the week: 6 changes
    quarter = reviewer.get("/health/?owner=alice&days=90").content.decode()
    assert quarter.split('<path class="line" d="', 1)[1].split('"', 1)[0].count("V") == 59
    assert 'href="/owners/alice/"' in week


def test_an_owner_without_history_says_how_it_fills(reviewer):
    conflict("bob")
    html = reviewer.get("/health/?owner=bob").content.decode()
    assert html.count(EMPTY) == 2  # the pillar lines and the backlog


def test_an_unknown_or_malformed_owner_is_a_404_in_the_frame_and_never_echoed_as_html(reviewer, history):
    for owner in ("nobody", XSS):
        response = reviewer.get("/health/", {"owner": owner})
        assert response.status_code == 404
        assert "<script>" not in response.content.decode()


def test_the_backlog_shows_open_conflicts_and_time_to_resolution(reviewer, history):
    html = reviewer.get("/health/").content.decode()
    assert "Bags in conflict at each snapshot, last 30 days" in html
    assert re.search(r"<dt>Open now</dt><dd class=\"num\">1 ", html)
    assert "nothing resolved in 30 days" in html


def test_the_reliability_diagram_has_the_diagonal_and_a_bar_per_bin(reviewer):
    conflict("alice")
    empty = reviewer.get("/health/").content.decode()
    assert "No confirmations yet" in empty and 'class="diagonal"' in empty
    assert "30 more confirmations needed before probabilities read as frequencies" in empty
    belief("alice", key="diet:milk", value="oat milk")
    belief_confirm(user_id="alice", key="diet:milk", value="oat milk")
    belief("alice", key="pet:name", value="Rex")
    belief_confirm(user_id="alice", key="pet:name", value="Max")
    html = reviewer.get("/health/").content.decode()
    assert html.count('<rect class="bar"') == 1  # both stated 0.7: one bin, half right
    assert "50% of 2 confirmed" in html and '<dt>Confirmed outcomes</dt><dd class="num">2</dd>' in html
    assert "28 more confirmations needed" in html


def test_the_page_reads_in_a_fixed_number_of_queries(reviewer, history, django_assert_max_num_queries):
    with django_assert_max_num_queries(7):
        assert reviewer.get("/health/?days=90").status_code == 200
    with django_assert_max_num_queries(8):
        assert reviewer.get("/health/?days=90&owner=alice").status_code == 200

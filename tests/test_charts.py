"""The server-side charts: scales, ticks, step paths, legends and the empty state (no database)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.template.loader import render_to_string

from atlaso_site.ui import charts
from atlaso_site.ui.charts import NOT_ENOUGH_HISTORY, Bin, Series, step_chart

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
WEEK = {"start": NOW - timedelta(days=7), "end": NOW}


def hourly(values: list[float], *, end: datetime = NOW) -> list[tuple[datetime, float]]:
    return [(end - timedelta(hours=len(values) - 1 - i), v) for i, v in enumerate(values)]


@pytest.mark.parametrize(
    ("low", "high", "ticks"),
    [
        (0, 100, [0, 25, 50, 75, 100]),
        (0, 4, [0, 1, 2, 3, 4]),
        (0, 7, [0, 2, 4, 6, 8]),
        (0, 1, [0, 0.25, 0.5, 0.75, 1]),
        (0, 130, [0, 50, 100, 150]),
    ],
)
def test_value_ticks_are_round_and_cover_the_range(low, high, ticks):
    assert charts.nice_ticks(low, high) == ticks


def test_a_flat_or_reversed_range_still_gets_ticks():
    assert charts.nice_ticks(5, 5)[0] <= 5 <= charts.nice_ticks(5, 5)[-1]
    assert charts.nice_ticks(10, 0) == charts.nice_ticks(0, 10)


def test_the_linear_scale_maps_the_ends_and_the_middle():
    scale = charts.linear((0, 100), (200, 10))
    assert (scale(0), scale(100), scale(50)) == (200, 10, 105)
    assert charts.linear((3, 3), (0, 10))(3) == 5


@pytest.mark.parametrize(
    ("days", "labels"),
    [
        (7, ["7 d ago", "6 d ago", "5 d ago", "4 d ago", "3 d ago", "2 d ago", "1 d ago", "now"]),
        (30, ["30 d ago", "25 d ago", "20 d ago", "15 d ago", "10 d ago", "5 d ago", "now"]),
        (90, ["90 d ago", "75 d ago", "60 d ago", "45 d ago", "30 d ago", "15 d ago", "now"]),
        (1, ["1 d ago", "18 h ago", "12 h ago", "6 h ago", "now"]),
    ],
)
def test_time_ticks_count_back_from_now_in_the_viewers_terms(days, labels):
    ticks = charts.time_ticks(NOW - timedelta(days=days), NOW)
    assert [label for _, label, _ in ticks] == labels
    assert ticks[-1][0] == NOW and len(ticks) <= 8
    assert ticks[-1][2] == "2026-11-30 12:00 UTC"


def test_fewer_than_two_points_in_the_window_is_the_empty_state():
    old = [(NOW - timedelta(days=20), 50.0)]
    chart = step_chart([Series("FMI", old + hourly([60]))], title="FMI", y_label="FMI", **WEEK)
    assert chart.is_empty and chart.empty_message == NOT_ENOUGH_HISTORY
    assert chart.series == () and NOT_ENOUGH_HISTORY in chart.description


def test_values_scale_onto_the_plot_top_for_the_maximum_and_bottom_for_zero():
    chart = step_chart(
        [Series("FMI", hourly([0, 100]))], title="FMI", y_label="FMI", y_range=(0, 100), **WEEK
    )
    plot = chart.plot
    ticks = {tick.label: tick.position for tick in chart.y_ticks}
    assert ticks["0"] == plot.bottom and ticks["100"] == plot.top
    assert [mark.y for mark in chart.series[0].marks] == [plot.bottom, plot.top]


def test_a_snapshot_holds_until_the_next_and_the_last_until_now():
    chart = step_chart(
        [Series("FMI", hourly([40, 40, 60], end=NOW - timedelta(hours=5)))],
        title="FMI",
        y_label="FMI",
        y_range=(0, 100),
        **WEEK,
    )
    path = chart.series[0].path
    # Move to the first point, hold (H) to the change, step (V), hold to the right edge.
    assert re.fullmatch(r"M[\d.]+,[\d.]+H[\d.]+V[\d.]+H[\d.]+", path), path
    assert path.endswith(f"H{chart.plot.right:.1f}")


def test_a_long_constant_line_still_has_two_marks_and_dense_lines_are_thinned():
    chart = step_chart([Series("FMI", hourly([50] * 500))], title="FMI", y_label="FMI", **WEEK)
    assert len(chart.series[0].marks) == 2
    noisy = hourly([i % 7 for i in range(24 * 7)])
    thinned = charts.thin(noisy, start=WEEK["start"], end=NOW, max_points=50)
    assert len(thinned) <= 51 and thinned[-1] == noisy[-1]
    assert charts.thin([(NOW, 1.0), (NOW, 1.0)], start=WEEK["start"], end=NOW) == [(NOW, 1.0)]


def test_one_line_has_no_legend_and_several_do_with_their_last_values():
    one = step_chart([Series("FMI", hourly([1, 2]))], title="FMI", y_label="FMI", **WEEK)
    assert not one.has_legend
    several = step_chart(
        [Series("FMI", hourly([50, 72])), Series("coverage", hourly([40, 57.14]), unit="%")],
        title="Pillars",
        y_label="%",
        y_range=(0, 100),
        **WEEK,
    )
    assert several.has_legend
    assert [(s.label, s.last_label, s.colour) for s in several.series] == [
        ("FMI", "72", 0),
        ("coverage", "57%", 1),
    ]


def test_counts_get_whole_number_ticks():
    chart = step_chart([Series("bags", hourly([0, 1]))], title="Backlog", y_label="bags", **WEEK)
    assert [tick.label for tick in chart.y_ticks] == ["0", "1", "2", "3", "4"]


def test_the_reliability_diagram_draws_bars_dots_and_the_diagonal():
    chart = charts.reliability_chart(
        [Bin(0.7, 0.8, 0.74, 0.5, 2), Bin(0.9, 1.0, 0.95, 1.0, 3)], title="Calibration", empty_message="none"
    )
    plot = chart.plot
    low, high = chart.bins
    assert high.y == plot.top and high.height == plot.bottom - plot.top
    assert low.height == pytest.approx((plot.bottom - plot.top) / 2, abs=0.2)
    assert chart.diagonal == f"M{plot.left:.1f},{plot.bottom:.1f}L{plot.right:.1f},{plot.top:.1f}"
    assert high.count_label == "n=3" and "100% of 3 confirmed" in high.title
    empty = charts.reliability_chart([], title="Calibration", empty_message="No confirmations yet")
    assert empty.is_empty and empty.bins == () and empty.diagonal


def test_the_line_template_draws_an_accessible_svg_with_labelled_axes_and_a_legend():
    chart = step_chart(
        [Series("FMI", hourly([50, 72])), Series("coverage", hourly([40, 57]), unit="%")],
        title="FMI & <pillars>",
        y_label="FMI; pillars in %",
        y_range=(0, 100),
        **WEEK,
    )
    html = render_to_string("charts/line.html", {"chart": chart})
    assert '<svg class="chart-svg"' in html and 'role="img"' in html
    assert '<title id="fmi-pillars-title">FMI &amp; &lt;pillars&gt;</title>' in html
    assert 'aria-label="FMI &amp; &lt;pillars&gt; over the' in html
    assert html.count('class="tick-label') == len(chart.x_ticks) + len(chart.y_ticks)
    # On a phone it is drawn larger (phone_scale) with the first, the last and every few time labels.
    assert 'style="--phone-scale: 2.16"' in html
    kept = [tick.label for tick in chart.x_ticks if tick.phone]
    assert kept[0] == chart.x_ticks[0].label and kept[-1] == chart.x_ticks[-1].label and 3 <= len(kept) <= 4
    assert html.count("tick-label phone-hidden") == len(chart.x_ticks) - len(kept)
    assert ">7 d ago<" in html.replace("<title>2026-11-23 12:00 UTC</title>", "")
    assert "FMI; pillars in %" in html and "now at the right" in html
    assert html.count('<path class="line"') == 2 and html.count('<circle class="mark"') == 4
    assert re.search(r'<ul class="chart-legend">.*coverage <span class="muted">57%</span>', html, re.S)


def test_the_line_template_says_why_a_chart_is_empty():
    chart = step_chart([Series("FMI", [])], title="FMI", y_label="FMI", **WEEK)
    html = render_to_string("charts/line.html", {"chart": chart})
    assert NOT_ENOUGH_HISTORY in html and "<svg" not in html


def test_the_reliability_template_draws_the_diagonal_and_a_bar_per_bin():
    chart = charts.reliability_chart([Bin(0.6, 0.7, 0.65, 0.5, 2)], title="Calibration", empty_message="none")
    html = render_to_string("charts/reliability.html", {"chart": chart})
    assert html.count('<rect class="bar"') == 1 and 'class="diagonal"' in html
    assert "stated probability" in html and "observed frequency" in html

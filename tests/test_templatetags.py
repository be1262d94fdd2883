"""{% load atlaso %}: ago, waited, percent, duration and the polarity bar."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.template import engines

from atlaso_site.ui.templatetags import ago, duration, percent, waited

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def render(source: str, **context: object) -> str:
    return engines["django"].from_string("{% load atlaso %}" + source).render(context)


def test_ago_says_how_long_ago_with_the_exact_time_on_hover():
    html = ago(NOW - timedelta(hours=3, minutes=5), now=NOW)
    assert html == (
        '<time datetime="2026-11-30T08:55:00.000000+00:00" '
        'title="2026-11-30T08:55:00.000000+00:00">3 h ago</time>'
    )
    assert ">just now</time>" in ago(NOW, now=NOW)
    assert ago(None) == '<span class="muted">—</span>'


def test_ago_works_as_a_tag_against_the_clock():
    html = render("{% ago moment %}", moment=datetime.now(UTC) - timedelta(days=2, hours=1))
    assert ">2 d ago</time>" in html


def test_waited_says_how_long_and_never_zero_minutes():
    assert waited(NOW - timedelta(seconds=20), now=NOW) == "less than a minute"
    assert waited(NOW - timedelta(minutes=5), now=NOW) == "5\xa0minutes"
    assert waited(NOW - timedelta(days=3, hours=2), now=NOW) == "3\xa0days, 2\xa0hours"
    assert waited(None) == "—"


def test_percent():
    assert percent(0.734) == "73%"
    assert percent(0.734, 1) == "73.4%"
    assert percent(1) == "100%"
    assert percent(0) == "0%"
    # Not certain never reads as certain: a digit more, then a bound.
    assert percent(0.996) == "99.6%"
    assert percent(0.9999) == "> 99.9%"
    assert percent(0.001) == "0.1%"
    assert percent(0.00001) == "< 0.1%"
    assert percent(0.9996, 1) == "99.96%"
    assert percent(0.99996, 1) == "> 99.99%"
    assert percent(None) == "—"
    assert render("{{ share|percent:1 }}", share=0.5) == "50.0%"


def test_duration():
    assert [duration(timedelta(minutes=m)) for m in (15, 90, 60, 1440, 1)] == [
        "15 minutes",
        "90 minutes",
        "1 hour",
        "1 day",
        "1 minute",
    ]
    assert duration(timedelta(seconds=30)) == "30 seconds"


@dataclass
class Counts:
    positive: int = 0
    negative: int = 0
    cautionary: int = 0
    open: int = 0


def test_the_polarity_bar_stacks_the_counts_and_says_them_in_words():
    html = render("{% polarity_bar counts %}", counts=Counts(positive=3, negative=1))
    assert 'role="img" aria-label="3 positive, 1 negative"' in html
    assert '<span class="seg positive" style="width: 75%"></span>' in html
    assert '<span class="seg negative" style="width: 25%"></span>' in html
    assert "cautionary" not in html and "seg open" not in html


def test_the_polarity_bar_takes_a_dict_and_an_empty_bag():
    html = render("{% polarity_bar counts %}", counts={"positive": 1, "cautionary": 1, "open": 1})
    assert 'aria-label="1 positive, 1 cautionary, 1 open"' in html
    assert html.count('style="width: 33.33%"') == 3
    assert 'aria-label="no deposits"' in render("{% polarity_bar counts %}", counts=Counts())

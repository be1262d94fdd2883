"""The dashboard's template tags, `{% load atlaso %}` (registered in TEMPLATES' libraries).

`{% ago moment %}` a relative time with the exact one on hover, `{{ since|waited }}` how long,
`{{ share|percent }}`, `{{ span|duration }}`, `{% polarity_bar counts %}` the stacked bar of a
bag's polarity counts, and `{% term "bag" %}` / `{% explain "bag" %}` a term linked to its entry
in /help/ (the word, or a “?”).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django import template
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from django.utils.timesince import timesince

from atlaso_site.lib.timefmt import age, isoformat
from atlaso_site.ui.glossary import TERMS

register = template.Library()

POLARITIES = ("positive", "negative", "cautionary", "open")


@register.simple_tag
def ago(moment: datetime | None, now: datetime | None = None) -> str:
    """`<time datetime=… title=…>3 h ago</time>`; a dash for no time."""
    if moment is None:
        return mark_safe('<span class="muted">—</span>')
    words = age(moment, now or timezone.now())
    text = words if words == "just now" else f"{words} ago"
    exact = isoformat(moment)
    return format_html('<time datetime="{}" title="{}">{}</time>', exact, exact, text)


@register.filter
def waited(since: datetime | None, now: datetime | None = None) -> str:
    """How long something has waited, in words: "3 days, 2 hours"; "less than a minute", never "0 minutes"."""
    if since is None:
        return "—"
    now = now or timezone.now()
    if (now - since).total_seconds() < 60:
        return "less than a minute"
    return timesince(since, now)


@register.filter
def percent(share: float | None, digits: int = 0) -> str:
    """0.734 → "73%" (`|percent:1` → "73.4%"); nothing → "—".

    A share short of all or above none never reads as 100% or 0%: 0.996 is "99.6%" (a digit
    more), 0.9999 "> 99.9%", as a probability that is not certain must not look certain.
    """
    if share is None or share == "":
        return "—"
    value = float(share) * 100
    for places in (int(digits), int(digits) + 1):
        shown = f"{value:.{places}f}"
        if 0 < value < 100 and float(shown) in (0.0, 100.0):
            continue
        return f"{shown}%"
    return f"> {100 - 10**-places:.{places}f}%" if value > 50 else f"< {10**-places:.{places}f}%"


@register.filter
def duration(span: timedelta | None) -> str:
    """A timedelta in words: "15 minutes", "90 minutes", "1 hour", "2 days"."""
    if span is None:
        return "—"
    seconds = int(span.total_seconds())
    unit, size = next(
        ((unit, size) for unit, size in (("day", 86400), ("hour", 3600)) if seconds % size == 0 and seconds),
        ("minute", 60) if seconds >= 60 else ("second", 1),
    )
    whole = seconds // size
    return f"{whole} {unit}{'' if whole == 1 else 's'}"


def _count(counts: Any, polarity: str) -> int:
    value = counts.get(polarity, 0) if isinstance(counts, dict) else getattr(counts, polarity, 0)
    return int(value or 0)


@register.inclusion_tag("atlaso/polarity_bar.html")
def polarity_bar(counts: Any) -> dict[str, Any]:
    """A stacked bar of positive / negative / cautionary / open counts, labelled in words.

    `counts` is any object with those four attributes (or a dict with those keys).
    """
    numbers = {polarity: _count(counts, polarity) for polarity in POLARITIES}
    total = sum(numbers.values())
    segments = [
        {"polarity": polarity, "count": count, "width": f"{count * 100 / total:.4g}"}
        for polarity, count in numbers.items()
        if count
    ]
    label = ", ".join(f"{segment['count']} {segment['polarity']}" for segment in segments)
    return {"segments": segments, "label": label or "no deposits", "total": total}


# ---- Terms and /help/ -----------------------------------------------------------------------


def _help_url(anchor: str) -> str:
    if anchor not in TERMS:
        raise template.TemplateSyntaxError(f"no term {anchor!r} in atlaso_site/ui/glossary.py")
    return f"{reverse('diagnostics:help')}#{anchor}"


@register.simple_tag
def term(anchor: str, word: str | None = None, symbol: str | None = None) -> str:
    """A term shown as a link to its entry in /help/: `{% term "bag" %}`, `{% term "bag" "bags" %}`.

    `symbol` (κ, r) is kept as written, never upper-cased with a heading: `{% term "ceiling"
    "Ceiling" symbol="κ" %}` links both, `{% term "reliability" symbol="r" %}` the symbol alone.
    """
    url = _help_url(anchor)
    if symbol is None:
        return format_html('<a class="term" href="{}">{}</a>', url, word or TERMS[anchor].word)
    shown = format_html('<span class="symbol">{}</span>', symbol)
    if word:
        shown = format_html("{} {}", word, shown)
    return format_html('<a class="term" href="{}">{}</a>', url, shown)


@register.simple_tag
def explain(anchor: str) -> str:
    """A small “?” beside a term (a heading, a badge) leading to its entry in /help/."""
    url = _help_url(anchor)
    return format_html(
        '<a class="help-link" href="{}" aria-label="What “{}” means" title="What “{}” means">?</a>',
        url,
        TERMS[anchor].word,
        TERMS[anchor].word,
    )


# ---- The API docs -----------------------------------------------------------------------------

_SPECS: dict[int, Any] = {}


@register.simple_tag(takes_context=True)
def openapi_spec(context: template.Context) -> Any:
    """The OpenAPI document of the page's `api`, built once per process for the docs page to embed.

    `{% openapi_spec as spec %}{{ spec|json_script:"openapi-spec" }}` lets Swagger UI draw the
    operations without fetching /api/v1/openapi.json again: the same document that path serves.
    """
    api = context["api"]
    if id(api) not in _SPECS:
        _SPECS[id(api)] = api.get_openapi_schema()
    return _SPECS[id(api)]


@register.filter
def operations(spec: Any) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """The document's operations by tag, in its order: [(tag, [(METHOD, path, summary)])].

    The docs page lists them at once, and without JavaScript, until Swagger UI takes their place.
    """
    groups: dict[str, list[tuple[str, str, str]]] = {}
    for path, item in spec.get("paths", {}).items():
        for method, operation in item.items():
            if not isinstance(operation, dict):
                continue
            tag = (operation.get("tags") or ["other"])[0]
            groups.setdefault(tag, []).append((method.upper(), path, operation.get("summary", "")))
    return list(groups.items())

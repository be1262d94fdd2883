"""/help/: every term the pages use, each at its own anchor, for anyone logged in; pages link to it."""

from __future__ import annotations

import re

import pytest
from django.template import Context, Template, TemplateSyntaxError

from atlaso_site.ui.glossary import GROUPS, TERMS
from tests.cast import make_login

pytestmark = pytest.mark.django_db

# The anchors dashboard.md names, and the terms found unexplained where pages show them.
REQUIRED = [
    "bag",
    "live",
    "conflict",
    "fmi",
    "tier",
    "channel",
    "pivot",
    "inert",
    "unknown",
    "entropy",
    "lifted",
    "ceiling",
    "reliability",
    "coverage",
    "precision",
    "resolution-pillar",
    "density",
    "mass",
    "shift",
]


def test_help_is_for_anyone_logged_in_and_lists_every_term_at_its_anchor(client):
    assert client.get("/help/").status_code == 302
    client.force_login(make_login("no-role"))
    html = client.get("/help/").content.decode()
    anchors = re.findall(r'<div class="glossary-entry" id="([a-z-]+)">', html)
    assert anchors == [term.anchor for _, terms in GROUPS for term in terms]
    assert set(REQUIRED) <= set(anchors)
    assert len(anchors) == len(set(anchors))


def test_a_term_links_to_its_entry_and_an_unknown_term_is_an_error():
    html = Template(
        '{% load atlaso %}{% term "bag" %} {% term "live" "Live" %} {% explain "pivot" %}'
    ).render(Context())
    assert '<a class="term" href="/help/#bag">bag</a>' in html
    assert '<a class="term" href="/help/#live">Live</a>' in html
    assert 'href="/help/#pivot" aria-label="What “pivot” means"' in html
    with pytest.raises(TemplateSyntaxError):
        Template('{% load atlaso %}{% term "bagg" %}').render(Context())
    assert TERMS["ceiling"].also == "κ"


def test_the_belief_and_provenance_pages_link_their_symbols_and_words_to_their_entries(client):
    from tests.diagnostics.dashboard import belief

    belief("alice")  # one trusted observation of a new value: it is lifted
    client.force_login(make_login("operator"))
    page = client.get("/owners/alice/beliefs/diet:milk/").content.decode()
    for anchor, shown in [
        ("ceiling", '<span class="symbol">κ</span>'),
        ("reliability", '<span class="symbol">r</span>'),
        ("mass", "Mass"),
        ("shift", "Shift"),
        ("lifted", "lifted"),
        ("entropy", "bits"),
    ]:
        assert f'<a class="term" href="/help/#{anchor}">{shown}</a>' in page, anchor
        assert anchor in TERMS
    provenance = client.get("/provenance/").content.decode()
    assert '<a class="term" href="/help/#ceiling">Ceiling <span class="symbol">κ</span></a>' in provenance
    assert '<a class="term" href="/help/#ceiling"><span class="symbol">κ</span></a>' in provenance

"""The dashboard's part of recall by meaning.

The playground's mode and which ranking found each hit; coverage and the embedding backlog on
the owner page, the overview and the jobs page.
"""

from __future__ import annotations

import re

import pytest

from deposits.services.embedding import deposits_embed
from tests.deposits.dashboard import logged_in
from tests.deposits.scenario import put

pytestmark = pytest.mark.django_db


def found_by(html: str) -> dict[str, str]:
    """Each hit's deposit id and the ranking the page says found it."""
    rows = re.findall(r'<tr data-deposit-id="([0-9a-f-]+)".*?class="badge found-by (\w+)"', html, re.S)
    return dict(rows)


def test_the_playground_asks_in_the_mode_chosen_and_says_which_ranking_found_each_hit(local_embedder):
    vegan = put("open", "I'm vegan", {})
    bike = put("open", "I cycle to work every morning", {})
    deposits_embed()
    reviewer = logged_in("reviewer")
    page = reviewer.get(f"/owners/alice/recall/?q={'what food does she like'}&mode=meaning").content.decode()
    assert found_by(page) == {vegan: "meaning"}
    assert '<option value="meaning" selected>' in page
    assert "by meaning" in page
    hybrid = reviewer.get("/owners/alice/recall/?q=cycle+food&mode=hybrid").content.decode()
    assert found_by(hybrid)[bike] in ("words", "both")
    words = reviewer.get("/owners/alice/recall/?q=what+food+does+she+like&mode=words").content.decode()
    assert found_by(words) == {}
    assert "No hits." in words


def test_the_playground_shows_why_meaning_is_refused_without_an_embedder(db, settings):
    settings.ATLASO_EMBEDDER = "none"
    put("open", "I'm vegan", {})
    page = logged_in("reviewer").get("/owners/alice/recall/?q=food&mode=meaning").content.decode()
    assert 'id="mode-error"' in page and "needs an embedder" in page
    bad = logged_in("reviewer").get("/owners/alice/recall/?q=food&mode=vibes").content.decode()
    assert "mode must be one of words, meaning, hybrid" in bad


def test_coverage_and_the_backlog_show_on_the_owner_page_the_overview_and_the_jobs_page(local_embedder):
    put("open", "I'm vegan", {})
    deposits_embed()
    put("open", "I cycle to work", {})
    operator = logged_in("operator")
    owner = operator.get("/owners/alice/").content.decode()
    assert re.search(
        r"Recall by meaning: <strong>50%</strong> of 2 live deposits embedded; <strong>1</strong> waiting",
        owner,
    )
    for path in ("/", "/jobs/"):
        page = operator.get(path).content.decode()
        assert "<strong>50%</strong> of 2 live deposits embedded" in page, path
    deposits_embed()
    assert (
        "<strong>100%</strong> of 2 live deposits embedded; none waiting"
        in operator.get("/jobs/").content.decode()
    )


def test_with_no_embedder_the_pages_say_recall_by_meaning_is_off(db, settings):
    settings.ATLASO_EMBEDDER = "none"
    put("open", "I'm vegan", {})
    for path in ("/", "/jobs/", "/owners/alice/"):
        page = logged_in("operator").get(path).content.decode()
        assert "Recall by meaning is off (<code>ATLASO_EMBEDDER</code> is none)." in page, path

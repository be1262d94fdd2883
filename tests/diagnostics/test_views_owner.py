"""`/owners/<user_id>/`: FMI and trend, backlog, the bags table filtered in place, deposits, beliefs."""

from __future__ import annotations

import re

import pytest

from deposits.models import Deposit
from deposits.selectors.recall import recall
from deposits.services.deposits import deposit_retract, recall_record
from deposits.services.review import bag_resolve
from tests.deposits.dashboard import split
from tests.deposits.scenario import put
from tests.diagnostics.dashboard import XSS, agreeing, belief, conflict, logged_in, snapshots

pytestmark = pytest.mark.django_db


@pytest.fixture
def reviewer():
    return logged_in("reviewer")


@pytest.fixture
def alice():
    conflict("alice", env="prod")
    agreeing("alice", env="staging")
    belief("alice")


def bag_rows(html: str) -> list[str]:
    body = html.split("<tbody>", 1)[1].split("</tbody>", 1)[0] if "<tbody>" in html else ""
    return re.findall(r'<a href="(/owners/alice/bags/[^"]+/)"', body)


def test_an_owner_nothing_was_ever_deposited_for_is_a_404_in_the_frame(reviewer, alice):
    for path in ("/owners/bob/", "/owners/-dash/", "/owners/a%20b/", f"/owners/{'x' * 129}/"):
        response = reviewer.get(path)
        assert response.status_code == 404, path
        html = response.content.decode()
        assert "<h1>Not found</h1>" in html and 'class="topbar"' in html


def test_it_shows_the_fmi_its_pillars_and_the_trend_of_its_snapshots(reviewer, alice):
    snapshots("alice", [40, 55, 61])
    html = reviewer.get("/owners/alice/").content.decode()
    assert re.search(r"<h1>Memory owner <span class=\"owner-id\">alice</span></h1>", html)
    assert 'class="fmi-number"' in html
    for pillar in ("Coverage", "Precision", "Resolution", "Density"):
        assert re.search(rf'<dt><a class="term" href="/help/#[a-z-]+">{pillar}</a></dt>', html)
    assert '<title id="fmi-last-30-days-title">FMI, last 30 days</title>' in html
    assert html.count('<circle class="mark"') == 3


def test_without_two_snapshots_the_trend_says_how_it_fills(reviewer, alice):
    html = reviewer.get("/owners/alice/").content.decode()
    assert "Not enough history yet: snapshots are taken every 15 minutes by recompute_diagnostics" in html


def test_it_shows_the_owners_conflict_backlog(reviewer, alice):
    html = reviewer.get("/owners/alice/").content.decode()
    assert "<strong>1 open conflict</strong>, the oldest opened" in html


def test_each_bag_is_a_row_linking_to_its_page_with_its_bar_and_badges(reviewer, alice):
    html = reviewer.get("/owners/alice/").content.decode()
    assert len(bag_rows(html)) == 3  # the conflict, the agreeing claims, the belief's general bag
    assert html.count('class="polarity-bar"') == 3
    assert '<span class="badge conflict"><a class="term" href="/help/#conflict">conflict</a></span>' in html
    assert (
        '<span class="badge confident"><a class="term" href="/help/#confident">confident</a></span>' in html
    )
    assert '<span class="facet-name">env</span> prod' in html


def test_the_table_filters_by_facet(reviewer, alice):
    html = reviewer.get("/owners/alice/?env=staging").content.decode()
    assert len(bag_rows(html)) == 1 and "backoff" not in html.split('id="bags"')[1].split("</table>")[0]
    assert '<span class="facet-name">env</span> staging' in html
    assert 'name="env" value="staging"' in html
    nothing = reviewer.get("/owners/alice/?env=dev&model=gpt-5").content.decode()
    assert bag_rows(nothing) == [] and "No bag matches this filter." in nothing


def test_only_conflicts_keeps_the_bags_in_conflict(reviewer, alice):
    html = reviewer.get("/owners/alice/?conflict=1").content.decode()
    assert len(bag_rows(html)) == 1 and '<span class="badge confident">' not in html
    assert 'name="conflict" value="1" checked' in html


def test_a_number_facet_that_is_not_a_number_is_said_and_not_applied(reviewer, alice):
    html = reviewer.get("/owners/alice/?n=many").content.decode()
    assert "n must be a whole number; “many” is not, so it was not applied." in html
    assert len(bag_rows(html)) == 3


def test_an_htmx_request_gets_the_bags_table_alone(reviewer, alice):
    response = reviewer.get("/owners/alice/?conflict=1", headers={"HX-Request": "true"})
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="bags">') and "<h1>" not in html and "<html" not in html
    assert len(bag_rows(html)) == 1


def test_the_table_is_paginated_with_links_that_keep_the_filter(reviewer):
    for i in range(27):
        put("positive", f"claim {i}", {"model": "gpt-5", "env": f"env-{i}"}, user="alice")
    first = reviewer.get("/owners/alice/?model=gpt-5").content.decode()
    assert len(bag_rows(first)) == 25
    assert 'href="?model=gpt-5&amp;page=2"' in first and "page 1 of 2 · 27 bags" in first
    second = reviewer.get("/owners/alice/?model=gpt-5&page=2").content.decode()
    assert len(bag_rows(second)) == 2 and 'href="?model=gpt-5&amp;page=1"' in second
    assert set(bag_rows(first)).isdisjoint(bag_rows(second))
    past = reviewer.get("/owners/alice/?page=9").content.decode()
    assert "Page 9 is past the end." in past
    assert reviewer.get("/owners/alice/?page=x").status_code == 200


def test_recent_deposits_link_to_their_pages_and_beliefs_to_theirs(reviewer, alice):
    html = reviewer.get("/owners/alice/").content.decode()
    newest = Deposit.objects.filter(user_id="alice").order_by("-created_at").first()
    assert f'href="/owners/alice/deposits/{newest.pk}/"' in html
    assert 'href="/owners/alice/beliefs/diet%3Amilk/">diet:milk</a>' in html
    assert 'href="/owners/alice/beliefs/">All 1 belief</a>' in html
    assert 'href="/owners/alice/recall/"' in html


def test_a_retracted_deposit_is_not_among_the_recent_ones(reviewer, alice):
    gone = put("positive", "a claim taken back", {"env": "dev"}, user="alice")
    deposit_retract(user_id="alice", deposit_id=gone, reason="wrong")
    assert "a claim taken back" not in reviewer.get("/owners/alice/").content.decode()


def test_stored_text_renders_as_text(reviewer):
    put("positive", XSS, {"model": XSS, "env": "prod"}, user="alice")
    belief("alice", key="diet:milk", value=XSS)
    html = reviewer.get("/owners/alice/").content.decode()
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    filtered = reviewer.get("/owners/alice/", {"model": XSS}).content.decode()
    assert "<script>" not in filtered and len(bag_rows(filtered)) == 1


def test_the_page_reads_in_a_fixed_number_of_queries(reviewer, alice, django_assert_max_num_queries):
    snapshots("alice", [40, 55, 61])
    # 17: the FMI now, the latest snapshot's beside it, and the owners list's live row.
    with django_assert_max_num_queries(17):
        assert reviewer.get("/owners/alice/").status_code == 200
    for i in range(30):
        put("negative", f"more {i}", {"model": "m", "env": f"e{i}"}, user="alice")
        belief("alice", key=f"k:{i}", value="v")
    with django_assert_max_num_queries(17):
        assert reviewer.get("/owners/alice/").status_code == 200
    with django_assert_max_num_queries(6):
        assert reviewer.get("/owners/alice/?page=2", headers={"HX-Request": "true"}).status_code == 200


def test_a_bag_of_open_notes_says_it_holds_no_directional_claims_not_0_percent_or_thin(reviewer):
    for i in range(8):
        put("open", f"ask alice about her week ({i})", user="alice")
    owner = reviewer.get("/owners/alice/").content.decode()
    (row,) = re.findall(r"<tr[^>]*>\s*<td class=\"scope[^\"]*\">.*?</tr>", owner, re.S)
    assert re.search(r'no <a class="term" href="/help/#directional">directional</a> claims', row)
    assert ">0%<" not in row and "badge thin" not in row
    bag = reviewer.get(bag_rows(owner)[0]).content.decode()
    facts = bag.split('<dl class="facts">', 1)[1].split("</dl>", 1)[0]
    assert 'no <a class="term" href="/help/#directional">directional</a> claims' in facts
    assert ">0%<" not in facts and "badge thin" not in facts


def test_resolving_a_conflict_moves_the_fmi_the_owner_page_heads_with_at_once(reviewer):
    """Resolving a conflict moves the FMI the owner page heads with, with no snapshot run between.

    dashboard.md's browser walk: the latest snapshot's figure is named beside it, with its time.
    """
    bag = split("alice")
    agreeing("alice")
    for query in ("threshold", "backoff export"):
        recall_record(user_id="alice", results=recall(user_id="alice", query=query))
    snapshots("alice", [40, 55])
    before = reviewer.get("/owners/alice/").content.decode()
    bag_resolve(user_id="alice", bag_id=bag.bag_id, side="positive", reason="asked twice", reviewer="rita")
    after = reviewer.get("/owners/alice/").content.decode()
    fmi = lambda page: int(re.search(r'<span class="fmi-number">(\d+)</span>', page).group(1))  # noqa: E731
    assert fmi(after) > fmi(before)
    assert "snapshot</a>'s FMI, <strong>55</strong>" in after

"""`/owners/`: every owner with live deposits; prefix search as you type, sortable columns, pages."""

from __future__ import annotations

import re

import pytest

from deposits.services.deposits import deposit_retract
from tests.deposits.scenario import put
from tests.diagnostics.dashboard import XSS, belief, conflict, logged_in, snapshots

pytestmark = pytest.mark.django_db


@pytest.fixture
def reviewer():
    return logged_in("reviewer")


def owners_in(html: str) -> list[str]:
    """The owner ids of the table's rows, in order."""
    return re.findall(r'<td[^>]*><a href="/owners/([^/"]+)/">', html)


def row_of(html: str, user_id: str) -> str:
    return html.split(f'<td data-label="Owner"><a href="/owners/{user_id}/">', 1)[1].split("</tr>", 1)[0]


@pytest.fixture
def three():
    """alice: a conflict and an uncertain belief; bob: 3 deposits; tenant-a:carol: 1 deposit."""
    conflict("alice")
    belief("alice", key="pet:name", value="Rex", tier="web_fetch")
    for i in range(3):
        put("positive", f"bob claim {i}", {"env": f"e{i}"}, user="bob")
    put("positive", "carol claim", {"env": "prod"}, user="tenant-a:carol")
    snapshots("bob", [50, 64])


def test_every_owner_with_live_deposits_is_listed_with_its_counts(reviewer, three):
    html = reviewer.get("/owners/").content.decode()
    assert sorted(owners_in(html)) == ["alice", "bob", "tenant-a:carol"]
    assert "3 owners." in html
    alice = row_of(html, "alice")
    cells = re.findall(r"<td[^>]*>(.*?)</td>", alice, re.S)
    assert cells[0] == "3"  # two sides of the conflict and the belief's deposit
    assert "not yet snapshotted" in cells[1]
    assert '<span class="badge conflict">1</span>' in cells[2]
    assert 'href="/owners/alice/beliefs/">1</a>' in cells[3]
    assert "<time" in cells[4]
    # A snapshot's figure says how old it is, beside it.
    bob_fmi = re.findall(r"<td[^>]*>(.*?)</td>", row_of(html, "bob"), re.S)[1]
    assert re.match(
        r'<span class="fmi-cell">64</span> <span class="muted small"><time[^>]*>just now</time>', bob_fmi
    )


def test_an_owner_whose_deposits_are_all_retracted_is_not_listed(reviewer):
    gone = put("positive", "taken back", user="dora")
    deposit_retract(user_id="dora", deposit_id=gone, reason="wrong")
    html = reviewer.get("/owners/").content.decode()
    assert owners_in(html) == [] and "No memory owner holds a live deposit yet." in html


def test_the_search_finds_owners_by_prefix_exactly(reviewer, three):
    put("positive", "underscore", user="al_x")
    assert owners_in(reviewer.get("/owners/?q=tenant-a:").content.decode()) == ["tenant-a:carol"]
    assert sorted(owners_in(reviewer.get("/owners/?q=al").content.decode())) == ["al_x", "alice"]
    assert owners_in(reviewer.get("/owners/?q=al_").content.decode()) == ["al_x"]  # _ is no wildcard
    assert owners_in(reviewer.get("/owners/?q=ALI").content.decode()) == []  # case counts
    none = reviewer.get("/owners/?q=zed").content.decode()
    assert "No owner id starts with “zed”." in none


def test_the_search_field_searches_as_you_type_in_place(reviewer, three):
    html = reviewer.get("/owners/").content.decode()
    field = re.search(r'<input type="search" name="q"[^>]*>', html, re.S).group(0)
    assert 'hx-trigger="keyup changed delay:300ms, search"' in field
    assert 'hx-push-url="true"' in field and 'hx-target="#owners"' in field
    fragment = reviewer.get("/owners/?q=bo", headers={"HX-Request": "true"}).content.decode()
    assert fragment.lstrip().startswith('<div id="owners">') and "<h1>" not in fragment
    assert owners_in(fragment) == ["bob"]


def test_each_column_sorts_both_ways(reviewer, three):
    get = lambda sort: owners_in(reviewer.get(f"/owners/?sort={sort}").content.decode())  # noqa: E731
    assert get("owner") == ["alice", "bob", "tenant-a:carol"]
    assert get("-owner") == ["tenant-a:carol", "bob", "alice"]
    assert get("-deposits") == ["alice", "bob", "tenant-a:carol"]
    assert get("deposits") == ["tenant-a:carol", "alice", "bob"]
    assert get("-conflicts")[0] == "alice" and get("conflicts")[-1] == "alice"
    assert get("-uncertain")[0] == "alice" and get("uncertain")[-1] == "alice"
    assert get("-fmi") == ["bob", "alice", "tenant-a:carol"]  # not yet snapshotted: last either way
    assert get("fmi") == ["bob", "alice", "tenant-a:carol"]
    assert get("-activity")[0] == "tenant-a:carol" and get("activity")[0] == "alice"
    assert get("nonsense") == get("-activity")


def test_a_header_link_toggles_its_columns_direction_and_keeps_the_search(reviewer, three):
    html = reviewer.get("/owners/?q=a&sort=-deposits").content.decode()
    assert '<th class="num" aria-sort="descending"><a href="?q=a&amp;sort=deposits"' in html
    assert '<th aria-sort="none"><a href="?q=a&amp;sort=owner"' in html
    assert '<th class="num" aria-sort="none"><a href="?q=a&amp;sort=-fmi"' in html
    ascending = reviewer.get("/owners/?sort=deposits").content.decode()
    assert '<th class="num" aria-sort="ascending"><a href="?sort=-deposits"' in ascending


def test_the_list_is_paginated(reviewer):
    for i in range(53):
        put("positive", f"claim {i}", user=f"owner-{i:02d}")
    first = reviewer.get("/owners/?sort=owner").content.decode()
    assert len(owners_in(first)) == 50 and "page 1 of 2 · 53 owners" in first
    assert 'href="?sort=owner&amp;page=2"' in first
    second = reviewer.get("/owners/?sort=owner&page=2").content.decode()
    assert owners_in(second) == ["owner-50", "owner-51", "owner-52"]
    assert "Page 4 is past the end." in reviewer.get("/owners/?page=4").content.decode()


def test_a_search_echoes_as_text(reviewer, three):
    html = reviewer.get("/owners/", {"q": XSS}).content.decode()
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "No owner id can start with" in html


def test_the_list_reads_in_the_same_few_queries_however_many_owners(
    reviewer, three, django_assert_max_num_queries
):
    with django_assert_max_num_queries(4):
        assert reviewer.get("/owners/").status_code == 200
    for i in range(20):
        put("positive", f"claim {i}", user=f"more-{i}")
        snapshots(f"more-{i}", [30, 40])
    with django_assert_max_num_queries(4):
        assert reviewer.get("/owners/?sort=-fmi&q=m").status_code == 200

"""/owners/<user_id>/recall/: what an agent's GET /recall answers, without counting toward Coverage."""

from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest

from deposits.models import RecallLog
from tests.conftest import make_client
from tests.deposits.dashboard import logged_in, split, write
from tests.deposits.scenario import NARROW

pytestmark = pytest.mark.django_db


def hit_ids(html: str) -> list[str]:
    return re.findall(r'<tr data-deposit-id="([0-9a-f-]+)"', html)


def memory() -> None:
    """alice: two bags in conflict, one confident bag, an open note; all about the threshold."""
    split(positives=2, negatives=1)
    split(env="staging", positives=1, negatives=2)
    for i in range(3):
        write("alice", "positive", f"threshold 0.7 holds on batch {i}", {**NARROW, "env": "dev"})
    write("alice", "open", "threshold for canary still to decide", {"model": "gpt-5"})


@pytest.mark.parametrize(
    "query",
    [
        {"q": "threshold"},
        {"q": "threshold holds", "limit": 3},
        {"q": "threshold", "env": "staging"},
        {"q": "threshold", "model": "gpt-5", "limit": 1},
    ],
)
def test_it_shows_the_hits_the_api_returns_in_the_same_order(query):
    memory()
    agent = make_client(perms=("read",))
    answer = agent.get(f"/users/alice/recall?{urlencode(query)}")
    assert answer.status == 200
    page = logged_in("reviewer").get(f"/owners/alice/recall/?{urlencode(query)}")
    assert hit_ids(page.content.decode()) == [item["id"] for item in answer.body["items"]]
    assert answer.body["explain"] in page.content.decode()


def test_it_writes_no_recall_log_so_coverage_is_untouched():
    memory()
    logged_in("reviewer").get("/owners/alice/recall/?q=threshold")
    assert not RecallLog.objects.exists()


def test_each_hit_shows_its_flags_peers_and_explanation():
    bag = split(positives=1, negatives=1)
    text = logged_in("reviewer").get("/owners/alice/recall/?q=threshold").content.decode()
    assert '<span class="badge conflict">disagreement</span>' in text
    assert f'href="/owners/alice/deposits/{bag.negative[0]}/"' in text
    assert "Not confident: its bag disagrees (1 positive, 1 negative)." in text
    assert "2 hits across 1 bag · 1 bag in conflict · not confident" in text
    assert "has_disagreement=true" in text and "conflict_bag_count=1" in text


def test_conflicts_beyond_the_limit_are_marked():
    for env in ("a", "b", "c"):
        split(env=env)
    text = logged_in("reviewer").get("/owners/alice/recall/?q=threshold&limit=2").content.decode()
    assert "2 bags are in conflict beyond the limit" in text
    assert 'href="/owners/alice/?conflict=1"' in text
    full = logged_in("reviewer").get("/owners/alice/recall/?q=threshold&limit=10").content.decode()
    assert "beyond the limit" not in full


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        ("q=%2D%2D+%28%29", "q", "q holds no words to search for"),
        ("q=", "q", ""),
        ("q=threshold&limit=0", "limit", "limit must be 1..1000"),
        ("q=threshold&limit=many", "limit", "limit must be a whole number"),
        ("q=threshold&n=five", "n", "n must be a whole number"),
    ],
)
def test_a_query_that_breaks_a_rule_is_shown_in_the_form(query, field, message):
    split()
    response = logged_in("reviewer").get(f"/owners/alice/recall/?{query}")
    text = response.content.decode()
    assert response.status_code == 200 and hit_ids(text) == []
    assert re.search(rf'name="{field}"[^>]*aria-invalid="true"', text)
    assert message in text and "Nothing recalled" in text


def test_the_form_comes_empty_before_a_query():
    split()
    text = logged_in("reviewer").get("/owners/alice/recall/").content.decode()
    assert "Type a query and Recall." in text and "aria-invalid" not in text


def test_an_htmx_query_gets_the_form_and_results_alone():
    split()
    response = logged_in("reviewer").get("/owners/alice/recall/?q=threshold", headers={"HX-Request": "true"})
    text = response.content.decode()
    assert text.lstrip().startswith('<div id="playground">') and len(hit_ids(text)) == 2


@pytest.mark.parametrize("owner", ["nobody", "bad%20id"])
def test_an_unknown_owner_is_a_404(owner):
    split()
    response = logged_in("reviewer").get(f"/owners/{owner}/recall/?q=threshold")
    assert response.status_code == 404 and "<h1>Not found</h1>" in response.content.decode()


def test_the_playground_takes_a_fixed_number_of_queries(django_assert_max_num_queries):
    for env in ("a", "b", "c", "d"):
        split(env=env, positives=5, negatives=5)
    client = logged_in("reviewer")
    # 12 on PostgreSQL (its search backend asks three times), 9 on SQLite; never more with more rows.
    with django_assert_max_num_queries(12):
        text = client.get("/owners/alice/recall/?q=threshold&limit=40").content.decode()
    assert len(hit_ids(text)) == 40

"""An owner's beliefs: each key's asserted value, probability and doubt; the filter; paging."""

from __future__ import annotations

import re

import pytest

from tests.beliefs.dashboard import XSS, believe, channel, seed_alice
from tests.cast import make_login

pytestmark = pytest.mark.django_db


@pytest.fixture
def reviewer(client):
    client.force_login(make_login("reviewer"))
    return client


def rows(html: str) -> list[str]:
    body = html.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return re.findall(r"<tr.*?</tr>", body, flags=re.S)


def test_it_lists_each_key_with_its_value_probability_doubt_and_counts(reviewer):
    seed_alice()
    response = reviewer.get("/owners/alice/beliefs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<h1>Beliefs of alice</h1>" in html
    coffee, milk = rows(html)
    assert 'href="/owners/alice/beliefs/coffee_ratio/"' in coffee
    assert "4 oz per tbsp" in coffee and "70%" in coffee and "uncertain</span>" not in coffee
    assert "2 <span" in coffee and "(1 counted)" in coffee
    assert 'href="/owners/alice/beliefs/diet:milk/"' in milk
    assert (
        "nothing asserted" in milk
        and 'class="badge uncertain"><a class="term" href="/help/#uncertain">uncertain</a></span>' in milk
    )
    assert "(0 counted)" in milk
    assert "<time datetime=" in milk


def test_uncertain_only_keeps_the_beliefs_the_memory_should_ask_about(reviewer):
    seed_alice()
    html = reviewer.get("/owners/alice/beliefs/?uncertain=1").content.decode()
    (milk,) = rows(html)
    assert "diet:milk" in milk
    assert 'name="uncertain" value="1" checked' in html


def test_an_htmx_filter_answers_the_table_alone(reviewer):
    seed_alice()
    response = reviewer.get("/owners/alice/beliefs/?uncertain=1", headers={"HX-Request": "true"})
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="belief-table"')
    assert "<html" not in html and "diet:milk" in html and "coffee_ratio" not in html


def test_many_beliefs_are_paged_and_the_pager_keeps_the_filter(reviewer):
    agent = channel("support-agent", "agent_own")
    web = channel("web-reader", "web_fetch")
    for n in range(55):
        believe("bob", f"key-{n:02}", "a value", via=agent)
    for n in range(60):
        believe("bob", f"whisper-{n:02}", "a rumour", via=web)
    first = reviewer.get("/owners/bob/beliefs/?uncertain=1").content.decode()
    assert len(rows(first)) == 50
    assert 'href="/owners/bob/beliefs/?uncertain=1&amp;page=2"' in first
    assert "1–50 of 60" in first
    second = reviewer.get("/owners/bob/beliefs/?uncertain=1&page=2").content.decode()
    assert len(rows(second)) == 10
    assert "whisper-59" in second and "key-" not in second
    assert 'href="/owners/bob/beliefs/?uncertain=1"' in second  # back to the first page


def test_a_page_past_the_end_or_malformed_is_still_a_page(reviewer):
    seed_alice()
    assert reviewer.get("/owners/alice/beliefs/?page=999").status_code == 200
    assert "coffee_ratio" in reviewer.get("/owners/alice/beliefs/?page=x").content.decode()


def test_an_owner_without_beliefs_is_told_what_would_fill_the_list(reviewer):
    html = reviewer.get("/owners/nobody/beliefs/").content.decode()
    assert "nobody has no beliefs yet." in html
    assert "a deposit carries <code>belief: {key, value}</code>" in html
    assert "POST /api/v1/users/nobody/beliefs/&lt;key&gt;/observations" in html


def test_no_uncertain_belief_says_so_and_offers_the_whole_list(reviewer):
    believe("carol", "tea", "green", via=channel("owner-app", "user_direct"))
    html = reviewer.get("/owners/carol/beliefs/?uncertain=1").content.decode()
    assert "No uncertain beliefs." in html and 'href="/owners/carol/beliefs/"' in html


def test_stored_strings_and_the_owner_are_escaped(reviewer):
    believe("alice", "coffee_ratio", XSS, via=channel("owner-app", "user_direct"))
    html = reviewer.get("/owners/alice/beliefs/").content.decode()
    assert XSS not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    odd = reviewer.get("/owners/%3Cb%3Eeve/beliefs/")
    assert odd.status_code == 404
    assert "<b>eve" not in odd.content.decode() and "“&lt;b&gt;eve” is not a user_id" in odd.content.decode()


def test_the_list_costs_a_fixed_number_of_queries_however_many_beliefs(
    reviewer, django_assert_max_num_queries
):
    agent = channel("support-agent", "agent_own")
    for n in range(120):
        believe("bob", f"key-{n:03}", f"value {n}", via=agent)
    reviewer.get("/owners/bob/beliefs/")  # the session and the login's roles, read once
    with django_assert_max_num_queries(5):
        response = reviewer.get("/owners/bob/beliefs/?page=2")
    assert len(rows(response.content.decode())) == 50

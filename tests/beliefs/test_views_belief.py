"""One belief: the distribution with UNKNOWN, what was set aside, the revision log, and Confirm."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from beliefs.models import BeliefRevision, CalibrationOutcome
from beliefs.selectors import belief_verdict
from tests.beliefs.dashboard import XSS, believe, channel, seed_alice
from tests.cast import make_login

pytestmark = pytest.mark.django_db

PAGE = "/owners/alice/beliefs/coffee_ratio/"


@pytest.fixture
def reviewer(client):
    client.force_login(make_login("reviewer"))
    return client


def test_it_shows_the_distribution_with_unknown_and_the_inert_values_plainly(reviewer):
    seed_alice()
    response = reviewer.get(PAGE)
    assert response.status_code == 200
    html = response.content.decode()
    assert "<h1>Belief <code>coffee_ratio</code> of alice</h1>" in html
    assert '<p class="fact">4 oz per tbsp</p>' in html
    assert '<th scope="row" class="value">4 oz per tbsp</th>' in html
    assert '<th scope="row" class="value"><a class="term" href="/help/#unknown">UNKNOWN</a></th>' in html
    assert html.count("30.0%") >= 2  # UNKNOWN's row and the verdict's unknown mass
    assert '0.88 <a class="term" href="/help/#entropy">bits</a>' in html  # "bits" explained where shown
    assert 'at or below the <a class="term" href="/help/#pivot">pivot</a> (r ≤ 0.5)' in html
    assert "they cannot move this belief, however often they are repeated" in html
    assert "<li>&lt;script&gt;alert(1)&lt;/script&gt;</li>" in html
    assert XSS not in html


def test_superseded_and_contested_values_are_named(reviewer, settings):
    # With volatility ρ < 1 a newcomer starts low, so a weaker channel's value can stay contested.
    settings.BELIEF_VOLATILITY = 0.2
    owner, agent = channel("owner-app", "user_direct"), channel("support-agent", "agent_own")
    claimed = timezone.now() - timedelta(hours=1)
    believe("alice", "coffee_ratio", "4 oz", via=agent, observed_at=claimed)
    believe(
        "alice",
        "coffee_ratio",
        "5 oz",
        via=owner,
        observed_at=claimed + timedelta(minutes=1),
        content_confidence=0.98,
    )
    believe(
        "alice",
        "coffee_ratio",
        "6 oz",
        via=channel("tool", "tool_output"),
        observed_at=claimed + timedelta(minutes=2),
    )
    verdict = belief_verdict(user_id="alice", key="coffee_ratio")
    assert verdict.superseded == ("4 oz",) and verdict.contested == ("6 oz",)
    html = reviewer.get(PAGE).content.decode()
    superseded = html.split('href="/help/#superseded-value">Superseded', 1)[1].split("<h3>Contested", 1)[0]
    contested = html.split("<h3>Contested", 1)[1].split("</section>", 1)[0]
    assert "<li>4 oz</li>" in superseded and "<li>6 oz</li>" in contested


def test_the_revision_log_shows_each_claim_and_links_its_deposit(reviewer):
    seed_alice()
    deposit_id = uuid.uuid4()
    believe(
        "alice",
        "coffee_ratio",
        "5 oz per tbsp",
        via=channel("owner-app", "user_direct"),
        deposit_id=str(deposit_id),
    )
    html = reviewer.get(PAGE).content.decode()
    log = html.split('<section id="revisions"', 1)[1]
    assert "3, numbered in the order they are folded in" in log
    assert "support-agent" in log and 'agent_own <span class="muted">(0.80)</span>' in log
    assert 'web_fetch <span class="muted">(0.30)</span>' in log
    assert (
        '<a class="term" href="/help/#inert">set aside</a>' in log
        and '<span class="badge confident">effective</span>' in log
    )
    assert f'href="/owners/alice/deposits/{deposit_id}/"' in log
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in log


def test_a_long_log_is_paged_and_htmx_gets_the_log_alone(reviewer, django_assert_max_num_queries):
    agent = channel("support-agent", "agent_own")
    start = timezone.now() - timedelta(days=1)
    for n in range(120):
        believe("alice", "coffee_ratio", f"{n} oz", via=agent, observed_at=start + timedelta(minutes=n))
    reviewer.get(PAGE)
    with django_assert_max_num_queries(10):
        html = reviewer.get(PAGE + "?page=3").content.decode()
    log = html.split('<section id="revisions"', 1)[1]
    assert "101–120 of 120" in log and ">119 oz<" in log and ">0 oz<" not in log
    # The distribution names the ten heaviest values and folds the rest.
    assert "110 more values holding" in html
    fragment = reviewer.get(PAGE + "?page=2", headers={"HX-Request": "true", "HX-Target": "revisions"})
    text = fragment.content.decode()
    assert text.lstrip().startswith('<section id="revisions"') and "51–100 of 120" in text
    assert 'hx-get="/owners/alice/beliefs/coffee_ratio/?page=3"' in text


def test_an_unknown_key_is_a_404_in_the_frame(reviewer):
    seed_alice()
    response = reviewer.get("/owners/alice/beliefs/nothing-here/")
    assert response.status_code == 404
    html = response.content.decode()
    assert "<h1>Not found</h1>" in html and "alice has no belief nothing-here." in html
    assert 'aria-label="Dashboard"' in html and 'href="/owners/alice/beliefs/"' in html
    assert reviewer.post("/owners/alice/beliefs/nothing-here/", {"value": "x"}).status_code == 404
    assert not CalibrationOutcome.objects.exists()


def test_confirm_is_prefilled_with_the_asserted_value(reviewer):
    seed_alice()
    html = reviewer.get(PAGE).content.decode()
    assert 'name="value" id="id_value" value="4 oz per tbsp"' in html
    assert ">Confirm</button>" in html
    nothing = reviewer.get("/owners/alice/beliefs/diet:milk/").content.decode()
    assert 'name="value" id="id_value" value=""' in nothing


def test_confirming_writes_a_human_review_observation_and_an_outcome_and_moves_the_verdict(reviewer):
    seed_alice()
    response = reviewer.post(PAGE, {"value": "5 oz per tbsp"})
    assert response.status_code == 302 and response.url == PAGE
    revision = BeliefRevision.objects.filter(belief_key="coffee_ratio").latest("id")
    assert (revision.channel, revision.value, revision.effective) == ("human_review", "5 oz per tbsp", True)
    outcome = CalibrationOutcome.objects.get()
    assert (outcome.user_id, outcome.belief_key, outcome.confirmed_value, outcome.confirmed_by) == (
        "alice",
        "coffee_ratio",
        "5 oz per tbsp",
        "rita",
    )
    assert revision.source_id == "confirmed by rita"
    assert (outcome.top_value, outcome.top_probability, outcome.correct) == (
        "4 oz per tbsp",
        pytest.approx(0.7),
        False,
    )
    verdict = belief_verdict(user_id="alice", key="coffee_ratio")
    assert verdict.fact == "5 oz per tbsp" and verdict.superseded == ("4 oz per tbsp",)
    after = reviewer.get(PAGE).content.decode()
    assert "Confirmed “5 oz per tbsp”. The memory now asserts “5 oz per tbsp” at 99.0%." in after
    assert "before, its top value was “4 oz per tbsp” at 70.0%, which was wrong." in after
    assert '<p class="fact">5 oz per tbsp</p>' in after
    assert ">confirmed by rita</span>" in after  # whose word it was, in the revision log
    assert "Confirmed “5 oz per tbsp”" not in reviewer.get(PAGE).content.decode()  # shown once


def test_confirming_with_htmx_answers_the_new_verdict_in_place(reviewer):
    seed_alice()
    response = reviewer.post(PAGE, {"value": "4 oz per tbsp"}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="belief-body">') and "<html" not in html
    assert 'role="status">Confirmed “4 oz per tbsp”. The memory now asserts “4 oz per tbsp” at 99.6%.' in html
    assert "which was right." in html
    assert 'name="value" id="id_value" value="4 oz per tbsp"' in html
    assert CalibrationOutcome.objects.get().correct is True


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("", "Type the value you confirm as true."),
        ("   ", "Type the value you confirm as true."),
        ("x" * 501, "at most 500 characters"),
    ],
)
@pytest.mark.parametrize("htmx", [False, True])
def test_a_bad_value_is_shown_in_the_form_and_nothing_is_written(reviewer, value, error, htmx):
    seed_alice()
    headers = {"HX-Request": "true"} if htmx else {}
    response = reviewer.post(PAGE, {"value": value}, headers=headers)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'aria-invalid="true"' in html and error in html
    assert not CalibrationOutcome.objects.exists()
    assert belief_verdict(user_id="alice", key="coffee_ratio").fact == "4 oz per tbsp"


def test_a_confirmed_value_is_escaped(reviewer):
    seed_alice()
    reviewer.post(PAGE, {"value": XSS})
    html = reviewer.get(PAGE).content.decode()
    assert XSS not in html and "Confirmed “&lt;script&gt;alert(1)&lt;/script&gt;”" in html


def test_the_page_leads_with_one_sentence_in_plain_words(reviewer):
    seed_alice()
    html = reviewer.get(PAGE).content.decode()
    lead = html.split('<p class="belief-lead" id="belief-summary">', 1)[1].split("</p>", 1)[0]
    assert lead == (
        "The memory says <strong>4 oz per tbsp</strong> (70%). 1 observation counted; 1 set aside "
        "because it came from <code>web-reader</code>, which cannot change beliefs."
    )
    # Before the mathematics, not after it.
    assert html.index("belief-summary") < html.index("Probability")


def test_a_belief_only_untrusted_channels_spoke_to_says_nothing_is_asserted_and_why(reviewer):
    seed_alice()
    html = reviewer.get("/owners/alice/beliefs/diet:milk/").content.decode()
    lead = html.split('<p class="belief-lead" id="belief-summary">', 1)[1].split("</p>", 1)[0]
    assert lead.startswith("The memory asserts nothing here yet: no trusted observation has named a value.")
    assert "0 observations counted; 1 set aside because it came from <code>web-reader</code>" in lead


def test_revisions_are_numbered_in_sequence_within_the_belief(reviewer):
    seed_alice()
    html = reviewer.get(PAGE).content.decode()
    log = html.split('<section id="revisions"', 1)[1]
    numbers = [
        int(n)
        for n in re.findall(r'<td[^>]* class="num muted" title="revision \d+ of the store">(\d+)</td>', log)
    ]
    assert numbers == [1, 2]

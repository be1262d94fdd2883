"""Text made only of whitespace or invisible characters (zero-width spaces and joiners, the BOM)
counts as empty (api.md): every field that refuses whitespace-only text refuses it the same way,
and the OpenAPI document says so."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone

from atlaso_site.lib.text import INVISIBLE, is_blank
from atlaso_site.wire import NOT_BLANK, stripped_within
from beliefs.models import Belief, BeliefRevision
from beliefs.services import belief_rebuild
from deposits.domain.validation import MAX_CONTENT, MAX_REASON, DepositValidationError, validate_content
from deposits.models import Deposit

ZWSP, ZWNJ, ZWJ, WORD_JOINER, BOM = "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff"
EMPTY_LOOKING = [ZWSP, ZWNJ, ZWJ, WORD_JOINER, BOM, ZWSP * 3, f" {ZWJ}\t{BOM}\n", f"{ZWSP} {ZWSP}"]
SHOWING = ["a", f"{ZWSP}a", f"a{ZWJ}b", f"{BOM}Alice prefers oat milk", "👩\u200d💻"]


@pytest.mark.parametrize("content", EMPTY_LOOKING)
def test_content_made_only_of_invisible_characters_is_refused_like_whitespace(api, content):
    answer = api.post("/users/alice/deposits", {"content": content})
    assert answer.status == 422, answer.body
    assert answer.body["error"]["code"] == "validation_error"
    assert answer.body["error"]["field"] == "content"
    assert (
        answer.body["error"]["message"]
        == api.post("/users/alice/deposits", {"content": "  "}).body["error"]["message"]
    )
    assert not Deposit.objects.exists()


@pytest.mark.parametrize("content", SHOWING)
def test_content_that_shows_something_is_kept_with_its_invisible_characters(api, content):
    answer = api.post("/users/alice/deposits", {"content": content})
    assert answer.status == 201, answer.body
    assert answer.body["deposit"]["content"] == content


def test_a_correction_whose_reason_is_only_invisible_characters_is_refused(api):
    old = api.post("/users/alice/deposits", {"content": "likes tea"}).body["deposit"]["id"]
    answer = api.post(
        "/users/alice/contradict",
        {"content": "likes coffee", "contradicts": [old], "reason": f"{ZWSP} {BOM}"},
    )
    assert (answer.status, answer.body["error"]["field"]) == (422, "reason")
    assert Deposit.objects.count() == 1


def test_a_correction_whose_content_is_only_invisible_characters_is_refused(api):
    old = api.post("/users/alice/deposits", {"content": "likes tea"}).body["deposit"]["id"]
    answer = api.post("/users/alice/contradict", {"content": ZWJ, "contradicts": [old], "reason": "asked"})
    assert (answer.status, answer.body["error"]["field"]) == (422, "content")


def test_a_belief_value_made_only_of_invisible_characters_is_refused_on_a_deposit(api):
    body = {"content": "ratio", "belief": {"key": "ratio", "value": f"{ZWSP}{WORD_JOINER}"}}
    answer = api.post("/users/alice/deposits", body)
    assert (answer.status, answer.body["error"]["field"]) == (422, "belief.value")
    assert not Deposit.objects.exists()


@pytest.mark.parametrize("value", EMPTY_LOOKING)
def test_an_observation_whose_value_is_only_invisible_characters_is_refused(api, value):
    answer = api.post("/users/alice/beliefs/ratio/observations", {"value": value})
    assert (answer.status, answer.body["error"]["field"]) == (422, "value")
    assert not BeliefRevision.objects.exists()


def test_a_bulk_reports_an_invisible_only_item_as_failed_and_commits_the_others(api):
    items = [
        {"content": f"{BOM}{ZWSP}", "idempotency_key": "b-1"},
        {"content": "likes tea", "idempotency_key": "b-2"},
        {"content": "ratio", "idempotency_key": "b-3", "belief": {"key": "ratio", "value": ZWNJ}},
    ]
    answer = api.post("/users/alice/deposits/bulk", {"items": items})
    assert answer.status == 200, answer.body
    failed = [(f["index"], f["error"]["code"], f["error"]["field"]) for f in answer.body["failed"]]
    assert failed == [(0, "validation_error", "content"), (2, "validation_error", "belief.value")]
    assert [d["content"] for d in answer.body["committed"]] == ["likes tea"]


def test_the_invisible_characters_are_the_five_the_spec_and_the_client_name():
    from atlaso._validation import INVISIBLE as CLIENTS

    assert INVISIBLE == CLIENTS == "\u200b\u200c\u200d\u2060\ufeff"
    assert all(not character.isspace() for character in INVISIBLE)


@pytest.mark.parametrize("text", [*EMPTY_LOOKING, "", " ", "\t\n"])
def test_blank_text_is_whitespace_and_invisible_characters_only(text):
    assert is_blank(text)
    with pytest.raises(DepositValidationError):
        validate_content(text)


@pytest.mark.parametrize("text", SHOWING)
def test_text_with_one_visible_character_is_not_blank(text):
    assert not is_blank(text)


@pytest.mark.parametrize(
    "text", [*EMPTY_LOOKING, *SHOWING, f" {ZWSP * (MAX_REASON - 1)}a ", ZWSP * MAX_REASON + "a"]
)
def test_the_content_and_reason_patterns_admit_exactly_what_the_domain_accepts(text):
    for limit in (MAX_CONTENT, MAX_REASON):
        accepted = not is_blank(text) and len(text.strip()) <= limit
        assert bool(re.fullmatch(stripped_within(limit), text)) is accepted, (limit, text)


@pytest.mark.parametrize("value", [*EMPTY_LOOKING, *SHOWING])
def test_the_belief_value_pattern_admits_exactly_what_shows_something(value):
    assert (re.fullmatch(NOT_BLANK, value) is None) is is_blank(value)


def test_the_openapi_document_states_the_patterns(api):
    from atlaso_site.api import api as ninja_api

    schemas = ninja_api.get_openapi_schema()["components"]["schemas"]
    assert schemas["DepositIn"]["properties"]["content"]["pattern"] == stripped_within(MAX_CONTENT)
    assert schemas["ContradictIn"]["properties"]["reason"]["pattern"] == stripped_within(MAX_REASON)
    assert schemas["ObservationIn"]["properties"]["value"]["pattern"] == NOT_BLANK
    assert re.fullmatch(schemas["DepositIn"]["properties"]["content"]["pattern"], ZWSP) is None


def test_a_value_logged_before_the_rule_still_replays(db):
    # The log is append-only: a value it already holds must fold, whatever the door now refuses.
    now = timezone.now()
    BeliefRevision.objects.create(
        user_id="alice", belief_key="ratio", value=ZWSP, observed_at=now, arrived_at=now,
        channel="agent-a", tier="agent_own", ceiling=0.8, reliability=0.7, likelihood_ratio=2.3,
        floor=1.0, lifted=False, effective=True, prior=0.0, posterior=0.7, shift=0.7,
    )  # fmt: skip
    belief_rebuild(user_id="alice", key="ratio")
    assert Belief.objects.get().fact == ZWSP

"""Text made only of whitespace or invisible characters counts as empty (api.md), everywhere.

Default-ignorable and format characters, the Hangul fillers, the blank braille pattern: decided by
Unicode's properties. Every field that refuses whitespace-only text refuses it the same way, the
OpenAPI document says so, and the client refuses it before sending.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from pathlib import Path

import pytest
import regex
from django.utils import timezone

from atlaso_site.lib.text import INVISIBLE_RANGES, client_table, is_blank
from atlaso_site.wire import NOT_BLANK, stripped_within
from beliefs.models import Belief, BeliefRevision
from beliefs.services import belief_rebuild
from deposits.domain.validation import MAX_CONTENT, MAX_REASON, DepositValidationError, validate_content
from deposits.models import Deposit

ZWSP, ZWNJ, ZWJ, WORD_JOINER, BOM = "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff"
# The soft hyphen, the combining grapheme joiner, the Hangul filler and choseong filler, the
# blank braille pattern, the Mongolian vowel separator; a variation selector, a tag character
# (beyond the BMP), an Arabic letter mark.
SOFT_HYPHEN, CGJ, HANGUL_FILLER, CHOSEONG_FILLER, BRAILLE_BLANK, MVS = (
    "\u00ad", "\u034f", "\u3164", "\u115f", "\u2800", "\u180e",
)  # fmt: skip
VS16, TAG_A, ALM = "\ufe0f", "\U000e0041", "\u061c"
EMPTY_LOOKING = [
    ZWSP, ZWNJ, ZWJ, WORD_JOINER, BOM, ZWSP * 3, f" {ZWJ}\t{BOM}\n", f"{ZWSP} {ZWSP}",
    SOFT_HYPHEN, CGJ, HANGUL_FILLER, CHOSEONG_FILLER, BRAILLE_BLANK, MVS, VS16, TAG_A, ALM,
    f"{HANGUL_FILLER} {BRAILLE_BLANK}\n{SOFT_HYPHEN}{TAG_A * 3}",
]  # fmt: skip
SHOWING = [
    "a", f"{ZWSP}a", f"a{ZWJ}b", f"{BOM}Alice prefers oat milk", "👩\u200d💻", f"{BRAILLE_BLANK}\u2801",
    f"{HANGUL_FILLER}\uac00", f"co{SOFT_HYPHEN}operate", "🏴\U000e0067\U000e0062\U000e007f", "\U0001f600",
]  # fmt: skip


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


def invisible(code: int) -> bool:
    return any(first <= code <= last for first, last in INVISIBLE_RANGES)


def test_the_invisible_characters_are_those_unicodes_properties_name():
    by_property = regex.compile(r"[\p{Default_Ignorable_Code_Point}\p{Cf}]")
    for code in range(sys.maxunicode + 1):
        character = chr(code)
        name = unicodedata.name(character, "")
        named = ("HANGUL" in name and "FILLER" in name) or name == "BRAILLE PATTERN BLANK"
        expected = not character.isspace() and (named or by_property.match(character) is not None)
        assert invisible(code) is expected, hex(code)
    for character in (SOFT_HYPHEN, CGJ, HANGUL_FILLER, CHOSEONG_FILLER, BRAILLE_BLANK, MVS, ZWSP, BOM, TAG_A):
        assert invisible(ord(character)), hex(ord(character))


def test_the_clients_copy_of_the_invisible_characters_is_the_servers():
    from atlaso import _invisible

    copy = Path(_invisible.__file__).read_text()
    assert copy == client_table(), (
        "regenerate: python -m atlaso_site.lib.text > clients/python/src/atlaso/_invisible.py"
    )


def test_the_client_and_the_server_agree_on_blank_text_over_all_of_unicode():
    from atlaso._validation import is_blank as client_is_blank

    disagree = [
        hex(code)
        for code in range(sys.maxunicode + 1)
        if not 0xD800 <= code <= 0xDFFF
        for text in (chr(code), f" {chr(code)}{ZWSP}")
        if client_is_blank(text) is not is_blank(text)
    ]
    assert disagree == []
    blank = [chr(code) for first, last in INVISIBLE_RANGES for code in range(first, last + 1)]
    assert is_blank("".join(blank)) and client_is_blank("".join(blank))


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


@pytest.mark.parametrize("content", [SOFT_HYPHEN, HANGUL_FILLER, BRAILLE_BLANK, TAG_A, f"{CGJ} {MVS}"])
def test_the_client_refuses_invisible_only_content_before_sending(content):
    import httpx

    from atlaso import InputValidationError, Memory

    sent: list[httpx.Request] = []
    transport = httpx.MockTransport(lambda request: sent.append(request) or httpx.Response(500))
    user = Memory(api_key="k", base_url="http://atlaso.test", transport=transport).for_user("alice")
    with pytest.raises(InputValidationError, match="content must be non-empty"):
        user.add(content)
    assert sent == []


def test_a_bulk_refuses_items_of_fillers_blank_braille_and_soft_hyphens(api):
    items = [
        {"content": f"{HANGUL_FILLER}{CHOSEONG_FILLER}", "idempotency_key": "b-1"},
        {"content": f"{BRAILLE_BLANK} {SOFT_HYPHEN}", "idempotency_key": "b-2"},
        {"content": "likes tea", "idempotency_key": "b-3"},
        {"content": f"{MVS}{CGJ}{TAG_A}", "idempotency_key": "b-4"},
    ]
    answer = api.post("/users/alice/deposits/bulk", {"items": items})
    assert answer.status == 200, answer.body
    assert [(f["index"], f["error"]["field"]) for f in answer.body["failed"]] == [
        (0, "content"), (1, "content"), (3, "content"),
    ]  # fmt: skip
    assert list(Deposit.objects.values_list("content", flat=True)) == ["likes tea"]

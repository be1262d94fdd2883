"""Scope facet values are compared and grouped in Unicode NFC (api.md).

"café" composed and decomposed are one bag, so their opposite claims are a conflict; a filter with
either spelling finds both; each deposit keeps its scope as it was sent.
"""

from __future__ import annotations

import unicodedata
from urllib.parse import urlencode

import pytest

from deposits.models import ScopeBag
from tests.deposits.recount import assert_bags_match_a_recount

COMPOSED = "caf\u00e9"  # é as one character
DECOMPOSED = "cafe\u0301"  # e and a combining acute accent
assert COMPOSED != DECOMPOSED and unicodedata.normalize("NFC", DECOMPOSED) == COMPOSED


def add(api, content: str, polarity: str, env: str, **scope: object) -> str:
    body = {
        "content": content,
        "polarity": polarity,
        "evidence_grade": "verified",
        "artifact_refs": ["s3://runs/1"],
        "scope": {"model": "gpt-5", "env": env, **scope},
    }
    answer = api.post("/users/alice/deposits", body)
    assert answer.status == 201, answer.body
    return answer.body["deposit"]["id"]


def test_opposite_claims_in_two_spellings_of_one_scope_are_one_bag_in_conflict(api):
    works = add(api, "the espresso threshold works", "positive", COMPOSED)
    fails = add(api, "the espresso threshold fails", "negative", DECOMPOSED)
    page = api.get("/users/alice/bags").body
    assert page["total"] == 1, page
    [bag] = page["items"]
    assert (bag["has_disagreement"], bag["counts"]["positive"], bag["counts"]["negative"]) == (True, 1, 1)
    assert bag["scope"]["env"] == COMPOSED  # the bag holds its facets in NFC
    recall = api.get("/users/alice/recall?q=espresso+threshold").body
    assert recall["has_disagreement"] and recall["conflict_bag_count"] == 1
    assert {hit["id"]: hit["conflict_peers"] for hit in recall["items"]} == {works: [fails], fails: [works]}
    # Each deposit keeps its scope as it was sent.
    assert api.get(f"/users/alice/deposits/{fails}").body["scope"]["env"] == DECOMPOSED
    assert api.get(f"/users/alice/deposits/{works}").body["scope"]["env"] == COMPOSED
    detail = api.get(f"/users/alice/bags/{bag['bag_id']}").body
    assert {d["id"] for d in detail["deposits"]} == {works, fails}
    assert_bags_match_a_recount()


@pytest.mark.parametrize("spelling", [COMPOSED, DECOMPOSED])
def test_a_filter_in_either_spelling_finds_the_bag_and_both_deposits(api, spelling):
    works = add(api, "the espresso threshold works", "positive", COMPOSED)
    fails = add(api, "the espresso threshold fails", "negative", DECOMPOSED)
    add(api, "the espresso threshold holds elsewhere", "positive", "prod")
    bags = api.get(f"/users/alice/bags?{urlencode({'env': spelling})}").body
    assert [bag["scope"]["env"] for bag in bags["items"]] == [COMPOSED]
    recall = api.get(f"/users/alice/recall?{urlencode({'q': 'espresso threshold', 'env': spelling})}").body
    assert {hit["id"] for hit in recall["items"]} == {works, fails}
    assert recall["has_disagreement"]


def test_a_correction_without_a_scope_lands_in_the_bag_of_what_it_corrects(api):
    wrong = add(api, "the espresso threshold fails", "negative", DECOMPOSED)
    add(api, "the espresso threshold works", "positive", COMPOSED)
    answer = api.post(
        "/users/alice/contradict",
        {
            "content": "the espresso threshold works after all",
            "contradicts": [wrong],
            "reason": "re-measured",
        },
    )
    assert answer.status == 201, answer.body
    assert ScopeBag.objects.count() == 1
    assert api.get("/users/alice/bags").body["items"][0]["has_disagreement"] is False


def test_a_facet_that_grows_in_nfc_is_grouped_whole(api):
    # U+FB2C (a Hebrew letter with two marks) is three characters in NFC: 200 sent, 600 compared.
    grows = "\ufb2c" * 200
    works = add(api, "the espresso threshold works", "positive", grows)
    fails = add(api, "the espresso threshold fails", "negative", grows)
    [bag] = api.get("/users/alice/bags").body["items"]
    assert bag["scope"]["env"] == unicodedata.normalize("NFC", grows) and bag["has_disagreement"]
    assert len(bag["scope"]["env"]) == 600
    assert {d["id"] for d in api.get(f"/users/alice/bags/{bag['bag_id']}").body["deposits"]} == {works, fails}
    assert api.get(f"/users/alice/deposits/{works}").body["scope"]["env"] == grows

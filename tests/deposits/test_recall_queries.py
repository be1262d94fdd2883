"""GET /users/{id}/recall: words not syntax, partial scope filters, the log, the hit shape."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from deposits.models import RecallLog
from tests.deposits.scenario import NARROW, claim


def add(api, body, user="alice"):
    answer = api.post(f"/users/{user}/deposits", body)
    assert answer.status == 201, answer.body
    return answer.body["deposit"]


def search(api, user="alice", **params):
    return api.get(f"/users/{user}/recall?{urlencode(params)}")


def ids(answer):
    return {hit["id"] for hit in answer.body["items"]}


def test_a_hit_carries_its_deposit_flattened_with_its_bags_flags(api):
    deposit = add(
        api, claim("positive", "threshold 0.7 is optimal", {**NARROW, "note": "q1 eval"}, tags=["fp"])
    )
    answer = search(api, q="threshold")
    assert answer.status == 200
    [hit] = answer.body["items"]
    common = ("id", "content", "polarity", "evidence_grade", "scope", "tags", "created_at")
    assert {name: hit[name] for name in common} == {name: deposit[name] for name in common}
    assert hit["deposit"] == deposit
    assert hit["kind"] == "search_result"
    assert hit["score"] > 0
    assert (
        hit["is_confident"],
        hit["has_disagreement"],
        hit["agreement_score"],
        hit["is_thin_evidence"],
    ) == (
        False,
        False,
        1.0,
        True,
    )
    assert (hit["conflict_peers"], hit["superseded"], hit["belief"]) == ([], False, None)
    assert hit["bag_id"].startswith("bag_")
    assert hit["explain"] == "Not confident: its bag holds a single directional claim (thin evidence)."
    assert answer.body["kind"] == "search_results"
    assert answer.body["explain"] == "1 hit across 1 bag · 0 bags in conflict · not confident"


def test_it_finds_a_word_that_only_the_scope_note_holds(api):
    deposit = add(api, claim("open", "over-flags in production", {**NARROW, "note": "calibration sweep"}))
    assert ids(search(api, q="calibration")) == {deposit["id"]}


def test_it_never_shows_another_owners_deposits(api):
    add(api, claim("positive", "threshold 0.7 is optimal"), user="bob")
    add(api, claim("negative", "threshold 0.7 over-flags"), user="bob")
    mine = add(api, claim("positive", "threshold 0.8 is optimal"))
    answer = search(api, q="threshold")
    assert ids(answer) == {mine["id"]}
    assert (answer.body["bag_count"], answer.body["has_disagreement"]) == (1, False)


def test_a_scope_filter_compares_only_the_facets_given(api):
    prod_a = add(api, claim("positive", "threshold run", {"model": "a", "env": "prod"}))
    prod_b = add(api, claim("positive", "threshold run", {"model": "b", "env": "prod"}))
    staging_a = add(api, claim("positive", "threshold run", {"model": "a", "env": "staging"}))
    prod_a_100 = add(api, claim("positive", "threshold run", {"model": "a", "env": "prod", "n": 100}))
    unscoped = add(api, claim("positive", "threshold run", {}))
    assert ids(search(api, q="threshold", env="prod")) == {prod_a["id"], prod_b["id"], prod_a_100["id"]}
    assert ids(search(api, q="threshold", model="a", env="prod")) == {prod_a["id"], prod_a_100["id"]}
    assert ids(search(api, q="threshold", model="a")) == {prod_a["id"], staging_a["id"], prod_a_100["id"]}
    assert ids(search(api, q="threshold", n=100)) == {prod_a_100["id"]}
    assert ids(search(api, q="threshold", env="eu")) == set()
    everything = search(api, q="threshold")
    assert ids(everything) == {prod_a["id"], prod_b["id"], staging_a["id"], prod_a_100["id"], unscoped["id"]}
    assert search(api, q="threshold", env="prod").body["bag_count"] == 3


def test_explain_counts_the_hits_returned_and_every_matching_bag(api):
    # The bag counts and flags cover every match; the hit count is what this page returns.
    for i in range(2):
        add(api, claim("positive", f"threshold holds, run {i}"))
    add(api, claim("open", "threshold for eu?", {**NARROW, "env": "eu"}))
    answer = search(api, q="threshold", limit=1)
    assert len(answer.body["items"]) == 1
    assert answer.body["explain"] == "1 hit across 2 bags · 0 bags in conflict · confident"
    whole = search(api, q="threshold").body
    assert whole["explain"] == "3 hits across 2 bags · 0 bags in conflict · confident"


HOSTILE = [
    ('a:b (c)* "d', 200),
    ("NOT", 200),
    ("-x", 200),
    ("' OR 1=1 --", 200),
    ("NEAR(a b) AND col:x^2*", 200),
    ("😀🎉🔥", 422),
    ("", 422),
    ("?!.,;:-()[]{}*\"'", 422),
    ("\u200b \t\n", 422),
]


@pytest.mark.parametrize(("q", "status"), HOSTILE, ids=[repr(q) for q, _ in HOSTILE])
def test_a_hostile_query_is_read_as_words_and_never_answers_500(api, q, status):
    add(api, claim("positive", "threshold 0.7 is optimal"))
    add(api, claim("negative", "latency doubles"))
    answer = search(api, q=q)
    assert answer.status == status, answer.body
    if status == 200:
        assert answer.body["kind"] == "search_results"
        # Operators are just words here: nothing turns the query into "match everything".
        assert len(answer.body["items"]) <= 1
    else:
        assert answer.body["error"]["code"] == "validation_error"
        assert answer.body["error"]["field"] == "q"
        assert "no words" in answer.body["error"]["message"]


def test_a_nul_character_in_the_query_is_refused_like_in_any_field(api):
    answer = search(api, q="\x00threshold")
    assert answer.status == 422
    assert (answer.body["error"]["code"], answer.body["error"]["field"]) == ("validation_error", "q")


def test_emoji_around_a_word_still_find_it(api):
    deposit = add(api, claim("positive", "threshold 0.7 is optimal"))
    assert ids(search(api, q="😀 threshold 🎉")) == {deposit["id"]}


def test_a_query_of_5000_characters_of_words_answers(api):
    deposit = add(api, claim("positive", "threshold 0.7 is optimal"))
    words = ("threshold " + " ".join(f"word{i}" for i in range(1000)))[:5000]
    answer = search(api, q=words)
    assert answer.status == 200
    assert ids(answer) == {deposit["id"]}


def test_a_missing_q_answers_422(api):
    answer = api.get("/users/alice/recall")
    assert (answer.status, answer.body["error"]["field"]) == (422, "q")


@pytest.mark.parametrize("limit", ["0", "1001", "-1", "abc", str(2**70)])
def test_a_limit_outside_1_to_1000_answers_422(api, limit):
    answer = api.get(f"/users/alice/recall?q=threshold&limit={limit}")
    assert answer.status == 422
    assert (answer.body["error"]["code"], answer.body["error"]["field"]) == ("validation_error", "limit")


def test_limits_of_1_and_1000_are_accepted(api):
    for limit in (1, 1000):
        assert search(api, q="threshold", limit=limit).status == 200


@pytest.mark.parametrize(
    ("facet", "value"),
    [("env", "prod\x00"), ("model", "m" * 201), ("n", str(2**70)), ("seed", "x")],
)
def test_a_bad_scope_filter_answers_422_not_500(api, facet, value):
    answer = search(api, q="threshold", **{facet: value})
    assert answer.status == 422, answer.body
    assert answer.body["error"]["code"] == "validation_error"
    assert facet in answer.body["error"]["field"]


def test_every_recall_is_logged_for_the_coverage_pillar(api):
    for i in range(2):
        add(api, claim("positive", f"threshold holds, run {i}"))
    add(api, claim("positive", "latency is fine"), user="bob")
    search(api, q="threshold")
    search(api, q="nothing matches this")
    search(api, user="bob", q="latency")
    rows = RecallLog.objects.order_by("id").values_list("user_id", "hit_count", "returned_confident")
    assert list(rows) == [("alice", 2, True), ("alice", 0, False), ("bob", 1, False)]
    assert all(row.created_at is not None for row in RecallLog.objects.all())

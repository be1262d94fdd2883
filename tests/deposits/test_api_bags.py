"""GET /users/{id}/bags and /bags/{bag_id}: an owner's scope bags with their live statistics."""

from __future__ import annotations

from datetime import datetime, timedelta
from urllib.parse import urlencode

import pytest

from deposits.domain.bags import bag_id
from deposits.domain.types import Scope
from tests.deposits.scenario import NARROW, correct, now, put, retract

BAG_FIELDS = {
    "kind", "bag_id", "user_id", "scope", "size", "counts", "dominant_polarity", "agreement_score",
    "has_disagreement", "is_thin_evidence", "is_confident", "resolved", "updated_at",
}  # fmt: skip


def bags(api, user="alice", **params):
    answer = api.get(f"/users/{user}/bags?{urlencode(params)}")
    assert answer.status == 200, answer.body
    return answer.body


def envs(page):
    return [bag["scope"]["env"] for bag in page["items"]]


def test_it_lists_a_bag_in_the_documented_shape(api):
    put("positive", "threshold 0.7 holds")
    put("positive", "threshold 0.7 holds again")
    put("negative", "threshold 0.7 over-flags")
    put("open", "threshold for eu?")
    page = bags(api)
    assert (page["kind"], page["total"]) == ("bag_page", 1)
    [bag] = page["items"]
    assert set(bag) == BAG_FIELDS
    assert datetime.fromisoformat(bag.pop("updated_at")).utcoffset() == timedelta(0)
    assert bag == {
        "kind": "bag",
        "bag_id": bag_id("alice", Scope(**NARROW)),
        "user_id": "alice",
        "scope": {**NARROW, "version": None, "n": None, "seed": None},
        "size": 4,
        "counts": {"positive": 2, "negative": 1, "cautionary": 0, "open": 1},
        "dominant_polarity": "positive",
        "agreement_score": pytest.approx(2 / 3),
        "has_disagreement": True,
        "is_thin_evidence": False,
        "is_confident": False,
        "resolved": False,
    }


def split_settled_and_thin() -> None:
    for env, polarities in {
        "split": ["positive", "cautionary"],
        "settled": ["negative", "negative"],
        "thin": ["positive", "open"],
    }.items():
        for polarity in polarities:
            put(polarity, f"{env} claim", {**NARROW, "env": env})


def test_conflict_true_lists_only_the_bags_that_disagree(api):
    split_settled_and_thin()
    conflicting = bags(api, conflict="true")
    assert (envs(conflicting), conflicting["total"]) == (["split"], 1)
    assert conflicting["items"][0]["has_disagreement"] is True
    calm = bags(api, conflict="false")
    assert (sorted(envs(calm)), calm["total"]) == (["settled", "thin"], 2)
    assert bags(api)["total"] == 3


def test_facet_filters_compare_only_the_facets_given(api):
    put("positive", "a", {"model": "a", "env": "prod"})
    put("positive", "b", {"model": "b", "env": "prod"})
    put("positive", "c", {"model": "a", "env": "staging"})
    put("positive", "d", {"model": "a", "env": "prod", "n": 100})
    assert bags(api, env="prod")["total"] == 3
    assert bags(api, model="a", env="prod")["total"] == 2
    assert [bag["scope"]["n"] for bag in bags(api, n=100)["items"]] == [100]
    assert bags(api, model="a", env="staging")["items"][0]["scope"] == {
        "model": "a", "dataset": None, "env": "staging", "version": None, "n": None, "seed": None,
    }  # fmt: skip
    assert bags(api, env="eu")["total"] == 0


def test_it_pages_bags_most_recently_changed_first_with_the_total(api):
    start = now() - timedelta(days=5)
    for day in range(5):
        put("positive", f"claim {day}", {**NARROW, "env": f"day{day}"}, at=start + timedelta(days=day))
    first = bags(api, limit=2)
    assert (envs(first), first["total"]) == (["day4", "day3"], 5)
    assert envs(bags(api, limit=2, offset=2)) == ["day2", "day1"]
    last = bags(api, limit=2, offset=4)
    assert (envs(last), last["total"]) == (["day0"], 5)
    assert bags(api, offset=50) == {"kind": "bag_page", "items": [], "total": 5}


def test_a_bag_whose_deposits_are_all_retracted_is_not_listed(api):
    put("positive", "kept", {**NARROW, "env": "kept"})
    gone = put("positive", "gone", {**NARROW, "env": "gone"})
    retract(gone)
    page = bags(api)
    assert (envs(page), page["total"]) == (["kept"], 1)


def test_it_never_lists_another_owners_bags(api):
    put("positive", "bob's claim", user="bob")
    assert bags(api) == {"kind": "bag_page", "items": [], "total": 0}


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("offset=-1", "offset"),
        (f"offset={2**70}", "offset"),
        ("offset=x", "offset"),
        ("limit=0", "limit"),
        ("limit=501", "limit"),
        ("conflict=maybe", "conflict"),
        ("env=prod%00", "env"),
    ],
)
def test_a_bad_paging_or_filter_parameter_answers_422(api, query, field):
    answer = api.get(f"/users/alice/bags?{query}")
    assert answer.status == 422, answer.body
    assert (answer.body["error"]["code"], answer.body["error"]["field"]) == ("validation_error", field)


def test_the_largest_offset_and_limit_are_accepted(api):
    assert bags(api, offset=2**31 - 1, limit=500)["items"] == []


def test_a_filter_no_bag_can_match_lists_nothing(api):
    put("positive", "a claim", {**NARROW, "n": 1})
    for params in ({"n": 2**70}, {"seed": -(2**70)}, {"model": "m" * 300}):
        assert bags(api, **params) == {"kind": "bag_page", "items": [], "total": 0}


def test_a_bag_lists_its_live_and_superseded_deposits_marked_newest_first(api):
    start = now() - timedelta(days=3)
    first = put("positive", "threshold 0.7 holds", at=start)
    withdrawn = put("positive", "threshold 0.7 holds, I think", at=start + timedelta(days=1))
    wrong = put("negative", "threshold 0.7 over-flags", at=start + timedelta(days=2))
    fix = correct([wrong], "threshold 0.7 holds; bad labels")
    retract(withdrawn)
    answer = api.get(f"/users/alice/bags/{bag_id('alice', Scope(**NARROW))}")
    assert answer.status == 200
    bag = answer.body
    assert set(bag) == BAG_FIELDS | {"deposits"}
    assert [(d["id"], d["state"]) for d in bag["deposits"]] == [
        (fix, "live"),
        (wrong, "superseded"),
        (first, "live"),
    ]
    by_id = {d["id"]: d for d in bag["deposits"]}
    assert by_id[wrong]["superseded_by"] == [fix]
    assert by_id[wrong]["content"] == "threshold 0.7 over-flags"
    assert by_id[fix]["contradicts"] == [wrong]
    assert (bag["size"], bag["counts"]["negative"], bag["has_disagreement"]) == (2, 0, False)
    assert (bag["is_confident"], bag["resolved"]) == (True, True)


def test_another_owners_bag_answers_404(api):
    put("positive", "bob's secret claim", user="bob")
    answer = api.get(f"/users/alice/bags/{bag_id('bob', Scope(**NARROW))}")
    assert answer.status == 404
    assert answer.body["error"]["code"] == "not_found"
    assert "secret" not in str(answer.body)


@pytest.mark.parametrize("malformed", ["nope", "bag_0123", "x" * 3000])
def test_a_malformed_bag_id_answers_404(api, malformed):
    answer = api.get(f"/users/alice/bags/{malformed}")
    assert answer.status == 404, answer.body
    assert answer.body["error"]["code"] == "not_found"


@pytest.mark.parametrize("malformed", ["bag_%00", "bag_" + "0" * 23 + "%00"])
def test_a_bag_id_holding_nul_is_refused_like_every_path_parameter(api, malformed):
    # api.md: every path parameter refuses NUL with 422.
    answer = api.get(f"/users/alice/bags/{malformed}")
    assert (answer.status, answer.body["error"]["field"]) == (422, "path")

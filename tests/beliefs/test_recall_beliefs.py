"""Recall hits carry their belief's verdict; a value the belief no longer asserts ranks lower."""

from __future__ import annotations

import pytest

from tests.beliefs.helpers import KEY, NEW, OLD

STALE_TEXT = "Coffee ratio: the coffee ratio for pour-over coffee is 4 oz per tbsp, coffee ratio settled"
FRESH_TEXT = "Switched the coffee to 5 oz per tbsp"


def write(client, content, value=None):
    body = {"content": content}
    if value is not None:
        body["belief"] = {"key": KEY, "value": value}
    answer = client.post("/users/alice/deposits", body)
    assert answer.status == 201, answer.body
    return answer.body["deposit"]["id"]


def recall(client, query="coffee ratio"):
    answer = client.get(f"/users/alice/recall?q={query.replace(' ', '+')}")
    assert answer.status == 200, answer.body
    return {item["id"]: item for item in answer.body["items"]}, [item["id"] for item in answer.body["items"]]


def test_a_hit_carries_its_belief_verdict_and_the_probability_of_its_own_value(api):
    stale = write(api, STALE_TEXT, OLD)
    note = write(api, "coffee ratio notes, no claim")
    hits, _ = recall(api)
    block = hits[stale]["belief"]
    assert (block["kind"], block["belief_key"], block["fact"]) == ("belief_verdict", KEY, OLD)
    assert (block["value"], block["asserted"]) == (OLD, True)
    assert block["value_probability"] == pytest.approx(0.7) == block["probability"]
    assert hits[note]["belief"] is None


def test_a_deposit_whose_value_is_no_longer_asserted_ranks_below_the_asserted_one(api, owner):
    stale = write(api, STALE_TEXT, OLD)
    assert recall(api)[1] == [stale]
    fresh = write(owner, FRESH_TEXT, NEW)
    hits, order = recall(api)
    # The stale deposit matches the query better, yet its value lost the belief.
    assert hits[stale]["score"] > hits[fresh]["score"]
    assert order == [fresh, stale]
    assert (hits[fresh]["belief"]["asserted"], hits[stale]["belief"]["asserted"]) == (True, False)
    assert hits[stale]["belief"]["fact"] == NEW
    assert hits[stale]["belief"]["superseded"] == [OLD]
    lost, won = hits[stale]["belief"], hits[fresh]["belief"]
    assert lost["value_probability"] == pytest.approx(lost["distribution"][OLD])
    assert lost["value_probability"] < won["value_probability"] == won["probability"]


def test_a_retracted_correction_restores_the_old_values_rank(api, owner):
    stale = write(api, STALE_TEXT, OLD)
    fresh = write(owner, FRESH_TEXT, NEW)
    owner.delete(f"/users/alice/deposits/{fresh}")
    hits, order = recall(api)
    assert order == [stale]
    assert hits[stale]["belief"]["asserted"] is True

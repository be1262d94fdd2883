"""GET /users/{id}/health and /peek: the Field Maturity Index and a glance at an owner."""

from __future__ import annotations

from datetime import timedelta

import pytest

from deposits.selectors.recall import recall
from deposits.services.deposits import recall_record
from tests.deposits.scenario import NARROW, correct, now, put, retract


def agent_recall(query: str, **kwargs) -> None:
    """A recall as the API makes it: answered, then counted toward Coverage."""
    recall_record(
        user_id="alice", results=recall(user_id="alice", query=query, **kwargs), now=kwargs.get("now")
    )


def at_env(env: str) -> dict[str, str]:
    return {**NARROW, "env": env}


def field_with_every_pillar_in_play() -> None:
    """Five bags whose pillars are worked out by hand in the test below."""
    for _ in range(2):
        put("positive", "alpha holds", at_env("a"))  # agrees: agreement 1
    for _ in range(3):
        put("positive", "bravo holds", at_env("b"))
    put("negative", "bravo fails", at_env("b"))  # split, unresolved: agreement 3/4
    put("open", "charlie?", at_env("c"))  # a single live deposit
    put("positive", "delta holds", at_env("d"))
    wrong = put("negative", "delta fails", at_env("d"))
    correct([wrong], "delta holds after all")  # split once, resolved: agreement 1
    put("positive", "echo holds", at_env("e"))
    retract(put("positive", "echo holds too", at_env("e")))  # a single live deposit left


def test_health_reports_the_four_pillars_of_a_field(api):
    field_with_every_pillar_in_play()
    today = now()
    agent_recall("alpha")  # confident
    agent_recall("alpha")  # confident
    agent_recall("bravo")  # in conflict
    agent_recall("alpha", now=today - timedelta(days=40))  # outside 30 days
    answer = api.get("/users/alice/health")
    assert answer.status == 200
    coverage, precision, resolution, density = 2 / 3, (1 + 3 / 4 + 1) / 3, 1 / 2, 1 - 2 / 5
    assert round(100 * (coverage * precision * resolution * density) ** 0.25) == 65
    assert answer.body == {
        "kind": "diagnostics",
        "fmi": 65,
        "coverage": pytest.approx(coverage),
        "precision": pytest.approx(precision),
        "resolution": pytest.approx(resolution),
        "density": pytest.approx(density),
        "window_days": 30,
        "deposit_count": 10,
        "explain": "Memory is usable (FMI 65/100). Most conflicts are unresolved; resolve them with "
        "contradicting deposits.",
    }
    wider = api.get("/users/alice/health?window_days=60").body
    assert (wider["coverage"], wider["fmi"], wider["window_days"]) == (pytest.approx(3 / 4), 67, 60)


def test_a_settled_field_is_healthy(api):
    put("positive", "alpha holds")
    put("positive", "alpha holds again")
    agent_recall("alpha")
    body = api.get("/users/alice/health").body
    assert (body["fmi"], body["coverage"], body["precision"], body["resolution"], body["density"]) == (
        100,
        1.0,
        1.0,
        1.0,
        1.0,
    )
    assert body["explain"] == "Memory is healthy (FMI 100/100). Searches are returning confident answers."


def test_an_empty_field_scores_0_and_says_nothing_is_stored(api):
    body = api.get("/users/nobody/health").body
    assert body == {
        "kind": "diagnostics",
        "fmi": 0,
        "coverage": 0.0,
        "precision": 1.0,
        "resolution": 1.0,
        "density": 0.0,
        "window_days": 30,
        "deposit_count": 0,
        "explain": "Memory is unreliable (FMI 0/100). Nothing is stored yet; add deposits to build it.",
    }


@pytest.mark.parametrize("window", ["0", "366", "-1", "x", str(2**70)])
def test_a_window_outside_1_to_365_days_answers_422(api, window):
    answer = api.get(f"/users/alice/health?window_days={window}")
    assert answer.status == 422
    assert (answer.body["error"]["code"], answer.body["error"]["field"]) == (
        "validation_error",
        "window_days",
    )


def test_windows_of_1_and_365_days_are_accepted(api):
    for window in (1, 365):
        assert api.get(f"/users/alice/health?window_days={window}").body["window_days"] == window


def test_peek_shows_the_newest_live_deposits_and_counts_every_unretracted_one(api):
    start = now() - timedelta(days=3)
    oldest = put("open", "one", at=start)
    replaced = put("open", "two", at=start + timedelta(days=1))
    retract(put("open", "three", at=start + timedelta(days=2)))
    newest = correct([replaced], "two, corrected", polarity="open")
    answer = api.get("/users/alice/peek")
    assert answer.status == 200
    body = answer.body
    assert (body["kind"], body["user_id"]) == ("peek_view", "alice")
    assert [d["id"] for d in body["deposits"]] == [newest, oldest]
    assert body["deposits"][0]["content"] == "two, corrected"
    # Soft-retracted deposits are left out of the count; superseded ones stay in it.
    assert body["total_count"] == 3
    assert body["fmi"] == api.get("/users/alice/health").body["fmi"]
    assert body["has_recent_disagreements"] is False
    assert [d["id"] for d in api.get("/users/alice/peek?limit=1").body["deposits"]] == [newest]


def test_peek_of_an_owner_without_deposits(api):
    assert api.get("/users/nobody/peek").body == {
        "kind": "peek_view",
        "user_id": "nobody",
        "deposits": [],
        "total_count": 0,
        "fmi": 0,
        "has_recent_disagreements": False,
    }


def recent(api) -> bool:
    return api.get("/users/alice/peek").body["has_recent_disagreements"]


def test_a_conflict_written_this_week_is_a_recent_disagreement(api):
    yesterday = now() - timedelta(days=1)
    put("positive", "threshold 0.7 holds", at=yesterday)
    put("negative", "threshold 0.7 over-flags", at=yesterday)
    assert recent(api) is True


def test_a_conflict_older_than_a_week_is_not_recent(api):
    ten_days_ago = now() - timedelta(days=10)
    put("positive", "threshold 0.7 holds", at=ten_days_ago)
    put("negative", "threshold 0.7 over-flags", at=ten_days_ago)
    put("positive", "latency is fine", at_env("other"))  # fresh, but in a calm bag
    assert recent(api) is False


def test_a_fresh_deposit_in_an_old_conflict_makes_it_recent(api):
    ten_days_ago = now() - timedelta(days=10)
    put("positive", "threshold 0.7 holds", at=ten_days_ago)
    put("negative", "threshold 0.7 over-flags", at=ten_days_ago)
    put("open", "threshold: which is it?")
    assert recent(api) is True


def test_a_recent_conflict_resolved_by_a_correction_is_no_longer_flagged(api):
    put("positive", "threshold 0.7 holds")
    wrong = put("negative", "threshold 0.7 over-flags")
    assert recent(api) is True
    correct([wrong], "threshold 0.7 holds; bad labels")
    assert recent(api) is False


@pytest.mark.parametrize("limit", ["0", "201", "x"])
def test_a_peek_limit_outside_1_to_200_answers_422(api, limit):
    answer = api.get(f"/users/alice/peek?limit={limit}")
    assert (answer.status, answer.body["error"]["field"]) == (422, "limit")

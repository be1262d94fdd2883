"""GET /calibration: Brier and ECE over reviewers' confirmations, overall and per tier."""

from __future__ import annotations

import pytest

from beliefs.models import BeliefRevision, CalibrationOutcome
from beliefs.services import belief_confirm, channel_bind
from diagnostics.job_runner import job_execute
from tests.beliefs.helpers import KEY, NEW, OLD, observe, verdict
from tests.conftest import make_client

EMPTY = {
    "kind": "calibration",
    "outcomes": 0,
    "brier": None,
    "ece": None,
    "per_tier": {},
    "diagram": [],
    "is_frequency": False,
}


def test_with_no_outcomes_it_reports_nothing_to_score(api):
    answer = api.get("/calibration")
    assert answer.status == 200
    assert answer.body == EMPTY


def test_a_confirmation_is_a_trusted_human_review_observation_and_keeps_the_verdict_before(api):
    observe(api, OLD)
    before = verdict(api)
    recorded, outcome = belief_confirm(user_id="alice", key=KEY, value=NEW)
    assert (recorded.revision.channel, recorded.revision.tier) == ("human_review", "user_edit")
    assert recorded.revision.reliability == pytest.approx(0.99)
    assert (recorded.verdict.fact, recorded.verdict.superseded) == (NEW, (OLD,))
    assert (outcome.confirmed_value, outcome.top_value, outcome.correct) == (NEW, OLD, False)
    assert outcome.top_probability == pytest.approx(0.7)
    assert outcome.verdict_before == {**before, "updated_at": outcome.verdict_before["updated_at"]}
    assert outcome.verdict_before["fact"] == OLD


@pytest.fixture
def three_outcomes(api, owner, web):
    """Right at 0.7 on agent_own, wrong at 0.9 on user_direct, right at 0.7 on agent_own."""
    observe(api, OLD)
    belief_confirm(user_id="alice", key=KEY, value=OLD)
    observe(owner, "green", key="tea", content_confidence=0.9)
    belief_confirm(user_id="alice", key="tea", value="black")
    # The web's later echoes moved nothing: the number still rests on agent_own's word.
    observe(api, "oat", user="bob", key="diet:milk")
    for _ in range(3):
        observe(web, "oat", user="bob", key="diet:milk", content_confidence=1.0)
    belief_confirm(user_id="bob", key="diet:milk", value="oat")


def test_brier_and_ece_match_a_hand_computation(api, three_outcomes):
    body = api.get("/calibration").body
    assert body["outcomes"] == 3
    # Brier: ((0.7 - 1)² + (0.9 - 0)² + (0.7 - 1)²) / 3 = (0.09 + 0.81 + 0.09) / 3.
    assert body["brier"] == pytest.approx(0.33)
    # ECE: bin 0.7 holds 2 right at 0.7 (gap 0.3), bin 0.9 holds 1 wrong at 0.9 (gap 0.9):
    # 2/3 × 0.3 + 1/3 × 0.9.
    assert body["ece"] == pytest.approx(0.5)
    assert body["diagram"] == [
        {"bin": 7, "confidence": pytest.approx(0.7), "frequency": 1.0, "count": 2},
        {"bin": 9, "confidence": pytest.approx(0.9), "frequency": 0.0, "count": 1},
    ]


def test_per_tier_is_keyed_by_the_tier_whose_word_the_top_value_rested_on(api, three_outcomes):
    per_tier = api.get("/calibration").body["per_tier"]
    assert set(per_tier) == {"agent_own", "user_direct"}
    assert per_tier["agent_own"] == {"outcomes": 2, "brier": pytest.approx(0.09), "ece": pytest.approx(0.3)}
    assert per_tier["user_direct"] == {"outcomes": 1, "brier": pytest.approx(0.81), "ece": pytest.approx(0.9)}


def test_a_withdrawn_deposit_is_not_the_word_a_value_rests_on(api, owner):
    observe(api, OLD)
    claim = {"key": KEY, "value": OLD, "content_confidence": 0.9}
    written = owner.post("/users/alice/deposits", {"content": "ratio", "belief": claim}).body["deposit"]["id"]
    owner.delete(f"/users/alice/deposits/{written}")
    _, outcome = belief_confirm(user_id="alice", key=KEY, value=OLD)
    assert outcome.top_probability == pytest.approx(0.7)
    assert outcome.tier == "agent_own"


def test_the_tier_is_the_channels_tier_the_verdict_was_read_with(api, web):
    observe(web, OLD, content_confidence=0.9)
    job_execute(channel_bind(name="web-reader", tier_name="user_direct")[1].pk)
    assert verdict(api)["fact"] == OLD
    _, outcome = belief_confirm(user_id="alice", key=KEY, value=OLD)
    assert outcome.tier == "user_direct"
    assert BeliefRevision.objects.filter(channel="web-reader").get().tier == "web_fetch"


def test_probabilities_are_a_ranking_until_enough_outcomes_exist(api, three_outcomes, settings):
    assert api.get("/calibration").body["is_frequency"] is False
    settings.BELIEF_CALIBRATION_MIN_OUTCOMES = 3
    assert api.get("/calibration").body["is_frequency"] is True
    settings.BELIEF_CALIBRATION_MIN_OUTCOMES = 4
    assert api.get("/calibration").body["is_frequency"] is False


def test_calibration_needs_the_read_permission(db, three_outcomes):
    writer = make_client(channel="writer-only", perms=("write",))
    assert writer.get("/calibration").status == 403
    assert CalibrationOutcome.objects.count() == 3

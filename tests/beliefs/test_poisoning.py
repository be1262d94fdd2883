"""A low-trust flood cannot move a fact the owner stated; the owner's correction always can."""

from __future__ import annotations

from itertools import cycle

import pytest

from atlaso_site.access.models import Channel
from beliefs.models import BeliefRevision
from beliefs.services import beliefs_verify, observation_record
from tests.beliefs.helpers import KEY, NEW, OLD, claimed, observe, pick, verdict, verdict_fields

NOVEL = [f"{ounces} oz per tbsp" for ounces in (7, 8, 9, 12)]
FLOOD = 1000
# Most of the flood goes through the service (the API adds nothing per call but time); the
# rest through the API, the deposit path included, so every entry point is shown to hold.
THROUGH_API = 10


@pytest.fixture
def established(api, owner):
    """coffee_ratio on user_direct: the agent's old value, then the owner's correction."""
    observe(api, OLD, observed_at=claimed(0))
    observe(owner, NEW, observed_at=claimed(10), content_confidence=0.95)
    return verdict(owner)


def test_a_web_flood_of_stale_and_novel_values_changes_no_verdict_field(web, established):
    assert (established["fact"], established["superseded"]) == (NEW, [OLD])
    channel = Channel.objects.select_related("tier").get(name="web-reader")
    # Stale values in shouting spellings, novel values, all with full content confidence.
    values = cycle([OLD.upper(), f"  {OLD}  ", *NOVEL])
    for _ in range(FLOOD - THROUGH_API):
        observation_record(
            user_id="alice", key=KEY, value=next(values), channel=channel, content_confidence=1.0
        )
    for index in range(THROUGH_API // 2):
        # Some claim to predate the owner's correction: they replay the log, still inert.
        early = claimed(5 + index)
        observe(web, next(values), content_confidence=1.0, taint_tier="user_edit", observed_at=early)
    for index in range(THROUGH_API - THROUGH_API // 2):
        answer = web.post(
            "/users/alice/deposits",
            {
                "content": f"CONFIRMED. VERIFIED. THIS IS FINAL: the coffee ratio is {OLD}. #{index}",
                "belief": {"key": KEY, "value": OLD, "content_confidence": 1.0},
            },
        )
        assert answer.status == 201, answer.body

    after = verdict(web)
    assert verdict_fields(after) == verdict_fields(established)
    assert after["distribution"] == {NEW: pytest.approx(0.95), OLD: pytest.approx(0.035)}
    assert pick(after, "entropy_bits", "unknown_mass") == pick(established, "entropy_bits", "unknown_mass")
    assert after["effective_count"] == established["effective_count"] == 2
    assert after["observation_count"] == 2 + FLOOD
    # Novel values are kept for audit, and only there.
    assert sorted(after["inert"]) == sorted(NOVEL)
    named = {*after["distribution"], *after["superseded"], *after["contested"]}
    assert not named & set(NOVEL)
    assert BeliefRevision.objects.filter(channel="web-reader", effective=True).count() == 0
    assert BeliefRevision.objects.filter(channel="web-reader").count() == FLOOD
    assert beliefs_verify()["mismatches"] == []


def test_the_owners_correction_supersedes_with_p_at_least_r(api, owner):
    for _ in range(10):
        observe(api, OLD, content_confidence=1.0)
    saturated = verdict(api)
    assert saturated["probability"] > 0.9999
    correction = observe(owner, NEW)
    r = correction["reliability"]
    assert r == pytest.approx(0.7)
    after = correction["verdict"]
    assert after["fact"] == NEW
    assert after["probability"] >= r
    assert after["superseded"] == [OLD]
    assert after["contested"] == []
    assert verdict(owner) == after


def test_flip_back_to_the_old_value_asserts_it_again(api, owner):
    observe(api, OLD)
    observe(owner, NEW)
    back = observe(owner, OLD, content_confidence=0.9)["verdict"]
    assert (back["fact"], back["superseded"]) == (OLD, [NEW])
    assert back["probability"] >= 0.9


def test_an_untrusted_first_sighting_does_not_squat_the_value(web, owner):
    for _ in range(5):
        observe(web, NEW, content_confidence=1.0)
    assert verdict(owner)["inert"] == [NEW]
    first_trusted = observe(owner, NEW, content_confidence=0.9)["verdict"]
    assert (first_trusted["fact"], first_trusted["probability"]) == (NEW, pytest.approx(0.9))
    assert first_trusted["inert"] == []

"""POST /users/{u}/beliefs/{key}/observations: what it records, what it refuses, where r comes from."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import quote

import pytest
from django.utils import timezone

from beliefs.models import Belief, BeliefRevision
from tests.beliefs.helpers import KEY, NEW, OLD, observe, verdict
from tests.conftest import make_client


def test_it_answers_201_with_the_revision_and_the_verdict_after_it(api):
    answer = api.post(f"/users/alice/beliefs/{KEY}/observations", {"value": OLD, "source_id": "chat-7"})
    assert answer.status == 201, answer.body
    body = answer.body
    assert body["kind"] == "belief_revision"
    assert (body["belief_key"], body["value"], body["source_id"]) == (KEY, OLD, "chat-7")
    assert (body["channel"], body["tier"], body["ceiling"]) == ("agent-a", "agent_own", 0.8)
    # Default c is 0.7, under agent_own's 0.8: a first trusted sighting leaves p = r, U = 1 - r.
    assert body["reliability"] == pytest.approx(0.7)
    assert body["effective"] is True
    assert body["verdict"]["fact"] == OLD
    assert body["verdict"]["probability"] == pytest.approx(0.7)
    assert body["verdict"]["unknown_mass"] == pytest.approx(0.3)
    assert BeliefRevision.objects.get().reliability == pytest.approx(0.7)


def test_a_value_is_compared_without_case_or_extra_spaces_and_keeps_its_first_spelling(api):
    observe(api, "5 Oz  per TBSP")
    after = observe(api, "  5 oz per tbsp ")
    assert list(after["verdict"]["distribution"]) == ["5 Oz per TBSP"]
    assert after["verdict"]["effective_count"] == 2


TOO_LONG_KEY = "a" * 129


@pytest.mark.parametrize(
    ("key", "body", "field"),
    [
        ("Coffee Ratio", {"value": NEW}, "key"),
        (TOO_LONG_KEY, {"value": NEW}, "key"),
        (KEY, {"value": ""}, "value"),
        (KEY, {"value": "   "}, "value"),
        (KEY, {"value": "x" * 501}, "value"),
        (KEY, {}, "value"),
        (KEY, {"value": NEW, "content_confidence": -0.1}, "content_confidence"),
        (KEY, {"value": NEW, "content_confidence": 1.1}, "content_confidence"),
        (KEY, {"value": NEW, "taint_tier": "gossip"}, "taint_tier"),
        (KEY, {"value": NEW, "observed_at": "2025-06-01T09:30:00"}, "observed_at"),
        (KEY, {"value": NEW, "observed_at": "last tuesday"}, "observed_at"),
        (KEY, {"value": NEW, "source_id": "s" * 201}, "source_id"),
    ],
    ids=[
        "key-with-capitals-and-space",
        "key-of-129-chars",
        "empty-value",
        "blank-value",
        "value-of-501-chars",
        "no-value",
        "confidence-below-0",
        "confidence-above-1",
        "unknown-taint-tier",
        "naive-observed-at",
        "unparseable-observed-at",
        "source-id-of-201-chars",
    ],
)
def test_bad_input_is_422_in_the_envelope_naming_the_field_and_changes_nothing(api, key, body, field):
    before = observe(api, OLD)["verdict"]
    answer = api.post(f"/users/alice/beliefs/{quote(key)}/observations", body)
    assert answer.status == 422, answer.body
    assert answer.body["kind"] == "error"
    assert answer.body["error"]["code"] == "validation_error"
    assert answer.body["error"]["field"] == field
    assert answer.body["error"]["message"]
    assert BeliefRevision.objects.count() == 1
    assert list(Belief.objects.values_list("key", flat=True)) == [KEY]
    assert verdict(api) == before


def test_a_value_of_500_characters_is_accepted(api):
    assert observe(api, "x" * 500)["verdict"]["fact"] == "x" * 500


@pytest.mark.parametrize(("minutes", "status"), [(6, 422), (4, 201)])
def test_a_claim_may_be_stamped_at_most_five_minutes_ahead(api, minutes, status):
    ahead = (timezone.now() + timedelta(minutes=minutes)).isoformat()
    answer = api.post(f"/users/alice/beliefs/{KEY}/observations", {"value": NEW, "observed_at": ahead})
    assert answer.status == status, answer.body
    if status == 422:
        assert answer.body["error"]["field"] == "observed_at"
    assert BeliefRevision.objects.count() == (status == 201)


@pytest.mark.parametrize("field", ["tier", "channel", "ceiling", "reliability"])
def test_the_body_cannot_name_a_tier_channel_or_trust(api, field):
    claimed_trust = "user_edit" if field in {"tier", "channel"} else 0.99
    answer = api.post(f"/users/alice/beliefs/{KEY}/observations", {"value": NEW, field: claimed_trust})
    assert answer.status == 422
    assert answer.body["error"]["field"] == field
    assert not BeliefRevision.objects.exists()
    assert not Belief.objects.exists()


@pytest.mark.parametrize(
    ("tier", "fields", "reliability"),
    [
        ("agent_own", {}, 0.7),
        ("agent_own", {"content_confidence": 1.0}, 0.8),
        ("agent_own", {"content_confidence": 1.0, "taint_tier": "user_edit"}, 0.8),
        ("agent_own", {"content_confidence": 1.0, "taint_tier": "web_fetch"}, 0.3),
        # A hedge on a trusted channel is floored just over the pivot, never above κ.
        ("agent_own", {"content_confidence": 0.2}, 0.55),
        ("web_fetch", {"content_confidence": 1.0}, 0.3),
        ("web_fetch", {"content_confidence": 1.0, "taint_tier": "user_edit"}, 0.3),
        ("untrusted", {"content_confidence": 1.0, "taint_tier": "user_direct"}, 0.1),
        ("user_direct", {"content_confidence": 1.0}, 0.98),
        ("user_direct", {"content_confidence": 0.9, "taint_tier": "document"}, 0.55),
    ],
)
def test_the_tier_comes_from_the_keys_channel_and_the_body_can_only_lower_r(db, tier, fields, reliability):
    client = make_client(channel=f"via-{tier.replace('_', '-')}", tier=tier)
    body = observe(client, NEW, **fields)
    assert body["tier"] == tier
    revision = BeliefRevision.objects.get()
    assert revision.tier == tier
    assert revision.reliability == pytest.approx(reliability)
    assert revision.reliability <= revision.ceiling
    assert body["reliability"] == pytest.approx(reliability)
    assert body["effective"] is (reliability > 0.5)


def test_a_read_only_key_cannot_post_an_observation(db):
    reader = make_client(channel="reader", perms=("read",))
    answer = reader.post(f"/users/alice/beliefs/{KEY}/observations", {"value": NEW})
    assert answer.status == 403
    assert answer.body["error"]["code"] == "forbidden"
    assert not BeliefRevision.objects.exists()

"""PUT /tiers/{name} and POST /channels: operators change trust, and a rebuild_beliefs run applies it."""

from __future__ import annotations

import pytest

from atlaso_site.access.models import Channel, ProvenanceTier
from atlaso_site.job_runs.models import JobRun
from beliefs.services import beliefs_verify, channel_bind, tier_update
from diagnostics.job_runner import job_execute
from tests.beliefs.helpers import NEW, OLD, observe, pick, verdict
from tests.conftest import make_client


@pytest.fixture
def agent_facts(api, owner):
    """agent-a (agent_own) set two beliefs; the owner set a third, which agent-a never touched."""
    observe(api, OLD)
    observe(api, "oat", user="bob", key="diet:milk")
    observe(owner, "green", key="tea")


def test_lowering_a_ceiling_below_the_pivot_removes_that_channels_facts_after_the_rebuild(
    api, admin, agent_facts, eager_worker
):
    assert verdict(api)["fact"] == OLD
    with eager_worker(execute=True) as sent:
        answer = admin.call("PUT", "/tiers/agent_own", {"ceiling": 0.4})
        assert answer.status == 200, answer.body
        assert pick(answer.body, "kind", "name", "ceiling") == {
            "kind": "tier",
            "name": "agent_own",
            "ceiling": 0.4,
        }
        job = answer.body["rebuild"]
        # The run is recorded before the answer, and sent to the worker only once it commits.
        assert (job["status"], job["total"], job["done"]) == ("queued", 2, 0)
        assert JobRun.objects.get(pk=job["id"]).status == "queued"
    assert len(sent) == 1
    finished = JobRun.objects.get(pk=job["id"])
    assert (finished.name, finished.trigger, finished.status) == (
        "rebuild_beliefs",
        "tier_change",
        "succeeded",
    )
    assert (finished.total, finished.done) == (2, 2)
    assert finished.counts == {"beliefs": 2, "rebuilt": 2, "changed": 2}
    assert finished.params == {"channels": ["agent-a"]}
    assert finished.started_at is not None and finished.finished_at >= finished.started_at
    assert finished.heartbeat_at >= finished.started_at
    gone = verdict(api)
    assert (gone["fact"], gone["distribution"], gone["unknown_mass"]) == (None, {}, 1.0)
    assert gone["inert"] == [OLD]
    assert gone["is_uncertain"] is True
    assert verdict(api, user="bob", key="diet:milk")["fact"] is None
    assert verdict(api, key="tea")["fact"] == "green"
    assert beliefs_verify()["mismatches"] == []


def test_tier_update_records_a_queued_run_that_the_runner_completes_once(api, agent_facts):
    tier, job = tier_update(name="agent_own", ceiling=0.45)
    assert tier.ceiling == 0.45
    assert (job.name, job.trigger, job.status, job.total, job.done) == (
        "rebuild_beliefs", "tier_change", "queued", 2, 0,
    )  # fmt: skip
    assert job.params == {"channels": ["agent-a"]}
    done = job_execute(job.pk)
    assert (done.status, done.total, done.done, done.counts["changed"]) == ("succeeded", 2, 2, 2)
    assert verdict(api)["fact"] is None
    # A run already taken is not run again: a second delivery does nothing.
    assert job_execute(job.pk) is None
    assert JobRun.objects.get(pk=job.pk).finished_at == done.finished_at


def test_raising_a_ceiling_back_restores_the_facts(api, agent_facts):
    job_execute(tier_update(name="agent_own", ceiling=0.4)[1].pk)
    job_execute(tier_update(name="agent_own", ceiling=0.8)[1].pk)
    restored = verdict(api)
    assert (restored["fact"], restored["probability"], restored["inert"]) == (OLD, pytest.approx(0.7), [])


def test_an_unchanged_ceiling_or_a_new_description_schedules_nothing(admin, agent_facts):
    same = admin.call("PUT", "/tiers/agent_own", {"ceiling": 0.8})
    described = admin.call("PUT", "/tiers/agent_own", {"description": "our own agents"})
    assert (same.status, same.body["rebuild"]) == (200, None)
    assert (described.body["description"], described.body["rebuild"]) == ("our own agents", None)
    assert not JobRun.objects.exists()


def test_lowering_a_taint_tier_rebuilds_the_beliefs_relayed_under_it(api, owner):
    # The owner relays a document's claim: r is capped by document (0.55), so it counts.
    observe(owner, NEW, taint_tier="document", content_confidence=1.0)
    assert verdict(owner)["fact"] == NEW
    job_execute(tier_update(name="document", ceiling=0.3)[1].pk)
    assert verdict(owner)["fact"] is None
    assert beliefs_verify()["mismatches"] == []


def test_rebinding_a_channel_to_another_tier_schedules_a_rebuild(api, admin, agent_facts, eager_worker):
    with eager_worker(execute=True):
        answer = admin.post("/channels", {"name": "agent-a", "tier": "web_fetch"})
    assert answer.status == 200, answer.body
    assert pick(answer.body, "kind", "name", "tier") == {
        "kind": "channel",
        "name": "agent-a",
        "tier": "web_fetch",
    }
    assert (answer.body["rebuild"]["status"], answer.body["rebuild"]["total"]) == ("queued", 2)
    assert Channel.objects.get(name="agent-a").tier.name == "web_fetch"
    job = JobRun.objects.get()
    assert str(job.pk) == answer.body["rebuild"]["id"]
    assert (job.name, job.trigger, job.status) == ("rebuild_beliefs", "channel_change", "succeeded")
    assert (job.done, job.total, job.params) == (2, 2, {"channels": ["agent-a"]})
    assert job.counts == {"beliefs": 2, "rebuilt": 2, "changed": 2}
    assert verdict(api)["fact"] is None
    assert verdict(api, key="tea")["fact"] == "green"
    # The channel's later words carry its new tier too.
    assert observe(api, NEW)["tier"] == "web_fetch"


def test_rebinding_through_the_service_and_back(api, agent_facts):
    channel, job = channel_bind(name="agent-a", tier_name="untrusted")
    assert channel.tier.name == "untrusted"
    assert (job.trigger, job.status) == ("channel_change", "queued")
    job_execute(job.pk)
    assert verdict(api)["fact"] is None
    job_execute(channel_bind(name="agent-a", tier_name="agent_own")[1].pk)
    assert verdict(api)["fact"] == OLD


def test_post_channels_creates_a_new_channel_without_a_rebuild(admin):
    answer = admin.post("/channels", {"name": "crm-sync", "tier": "tool_output", "description": "nightly"})
    assert answer.status == 201
    assert answer.body == {"kind": "channel", "name": "crm-sync", "tier": "tool_output", "rebuild": None}
    assert not JobRun.objects.exists()
    tiers = {item["name"]: item["channels"] for item in admin.get("/tiers").body["items"]}
    assert "crm-sync" in tiers["tool_output"]


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "field"),
    [
        ("PUT", "/tiers/agent_own", {"ceiling": 1.0}, 422, "ceiling"),
        ("PUT", "/tiers/agent_own", {"ceiling": 0}, 422, "ceiling"),
        ("PUT", "/tiers/agent_own", {"ceiling": 0.5, "name": "x"}, 422, "name"),
        ("PUT", "/tiers/no_such_tier", {"ceiling": 0.5}, 404, None),
        ("POST", "/channels", {"name": "agent-a", "tier": "no_such_tier"}, 422, "tier"),
        ("POST", "/channels", {"name": "Bad Name", "tier": "agent_own"}, 422, "name"),
    ],
)
def test_bad_provenance_changes_are_refused_and_change_nothing(
    admin, agent_facts, method, path, body, status, field
):
    answer = admin.call(method, path, body)
    assert answer.status == status, answer.body
    assert answer.body["kind"] == "error"
    assert answer.body["error"].get("field") == field
    assert ProvenanceTier.objects.get(name="agent_own").ceiling == 0.8
    assert Channel.objects.get(name="agent-a").tier.name == "agent_own"
    assert not JobRun.objects.exists()


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("PUT", "/tiers/agent_own", {"ceiling": 0.4}),
        ("POST", "/channels", {"name": "agent-a", "tier": "user_edit"}),
        ("POST", "/channels", {"name": "new-channel", "tier": "user_edit"}),
    ],
)
def test_a_key_without_admin_gets_403_and_changes_nothing(api, agent_facts, method, path, body):
    writer = make_client(channel="writer", perms=("read", "write", "erase"))
    for client in (api, writer):
        answer = client.call(method, path, body)
        assert answer.status == 403
        assert answer.body["error"]["code"] == "forbidden"
    assert ProvenanceTier.objects.get(name="agent_own").ceiling == 0.8
    assert Channel.objects.get(name="agent-a").tier.name == "agent_own"
    assert not Channel.objects.filter(name="new-channel").exists()
    assert not JobRun.objects.exists()
    assert verdict(api)["fact"] == OLD

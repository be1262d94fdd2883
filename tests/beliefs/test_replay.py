"""The stored state is the replay of the log: arrival order never matters, and drift is caught and fixed."""

from __future__ import annotations

import random
from datetime import timedelta
from io import StringIO
from unittest import mock

import pytest
from django.core.management import call_command, execute_from_command_line
from django.core.management.base import CommandError
from django.db import connections
from django.utils import timezone

from atlaso_site.job_runs.models import JobRun
from beliefs.models import Belief
from beliefs.services import beliefs_verify
from tests.beliefs.helpers import KEY, NEW, OLD, observe, verdict


@pytest.fixture
def claims(api, owner, web):
    """Twelve claims about one key, from three tiers, one minute apart, in claim-time order."""
    base = timezone.now() - timedelta(days=2)
    script = [
        (api, OLD, {}),
        (web, "9 oz per tbsp", {"content_confidence": 1.0}),
        (owner, NEW, {"content_confidence": 0.9}),
        (api, OLD, {"content_confidence": 0.3}),
        (web, OLD, {"content_confidence": 1.0}),
        (owner, NEW, {}),
        (api, "6 oz per tbsp", {"content_confidence": 1.0}),
        (web, "9 oz per tbsp", {}),
        (owner, OLD, {"content_confidence": 0.6}),
        (api, NEW, {"taint_tier": "document"}),
        (web, "6 oz per tbsp", {"content_confidence": 1.0}),
        (api, "6 oz per tbsp", {"content_confidence": 0.55}),
    ]
    return [
        (client, value, {**fields, "observed_at": (base + timedelta(minutes=minute)).isoformat()})
        for minute, (client, value, fields) in enumerate(script)
    ]


def post_all(claims, user):
    for client, value, fields in claims:
        observe(client, value, user=user, **fields)


def test_claims_arriving_out_of_order_give_the_same_stored_verdict_as_in_order(api, claims):
    shuffled = random.Random(20260511).sample(claims, len(claims))
    # The last to arrive is not the last claimed: a fold in arrival order would assert it.
    assert shuffled[-1][1] != claims[-1][1]
    post_all(claims, "in-order")
    post_all(shuffled, "shuffled")
    in_order, out_of_order = verdict(api, user="in-order"), verdict(api, user="shuffled")
    assert in_order["fact"] == "6 oz per tbsp"
    assert out_of_order == in_order
    states = dict(Belief.objects.values_list("user_id", "state"))
    assert states["shuffled"] == states["in-order"]
    logs = {user: api.get(f"/users/{user}/beliefs/{KEY}/revisions").body["items"] for user in states}
    assert [r["verdict"] for r in logs["shuffled"]] == [r["verdict"] for r in logs["in-order"]]
    out = StringIO()
    call_command("verify_beliefs", stdout=out)
    assert "verify_beliefs succeeded" in out.getvalue()
    assert "checked 2, mismatched 0" in out.getvalue()
    assert "DIFFERS" not in out.getvalue()


def test_a_late_claim_replays_the_log_from_its_place(api, owner):
    observe(owner, NEW, observed_at=(timezone.now() - timedelta(hours=1)).isoformat())
    late = observe(api, OLD, observed_at=(timezone.now() - timedelta(hours=2)).isoformat())
    # Claimed before the owner's word, it is folded before it: the owner's value stands.
    assert late["verdict"]["fact"] == NEW
    assert late["verdict"]["superseded"] == [OLD]
    assert beliefs_verify()["mismatches"] == []


def corrupt(user: str, key: str = KEY) -> None:
    row = Belief.objects.get(user_id=user, key=key)
    state = dict(row.state)
    state["candidates"] = [{**c, "mass": 1.0 - c["mass"]} for c in state["candidates"]]
    Belief.objects.filter(pk=row.pk).update(state=state, fact="corrupted")


def test_verify_exits_non_zero_naming_a_corrupted_belief_and_rebuild_fixes_it(api, owner, claims, capsys):
    post_all(claims, "alice")
    observe(owner, "oat", user="bob", key="diet:milk")
    before = verdict(api)
    corrupt("alice")
    assert verdict(api) != before

    # As manage.py runs it; closing connections at exit would end the test's transaction.
    with pytest.raises(SystemExit) as exited, mock.patch.object(connections, "close_all"):
        execute_from_command_line(["manage.py", "verify_beliefs"])
    assert exited.value.code == 1
    printed = capsys.readouterr()
    assert f"DIFFERS alice {KEY}" in printed.out
    assert "diet:milk" not in printed.out
    assert "1 belief(s) differ" in printed.err

    out = StringIO()
    call_command("rebuild_beliefs", stdout=out)
    assert "beliefs 2, rebuilt 2, changed 1" in out.getvalue()
    job = JobRun.objects.get(name="rebuild_beliefs")
    assert (job.trigger, job.status, job.total, job.done) == ("command", "succeeded", 2, 2)
    assert job.counts == {"beliefs": 2, "rebuilt": 2, "changed": 1}
    assert verdict(api) == before
    assert Belief.objects.get(user_id="alice", key=KEY).fact == before["fact"]
    call_command("verify_beliefs", stdout=StringIO())


def test_rebuild_beliefs_can_be_limited_to_a_channel(api, owner):
    observe(api, OLD)
    observe(owner, "oat", user="bob", key="diet:milk")
    corrupt("alice")
    corrupt("bob", "diet:milk")
    call_command("rebuild_beliefs", "--channel", "agent-a", stdout=StringIO())
    assert beliefs_verify()["mismatches"] == [["bob", "diet:milk"]]
    with pytest.raises(CommandError, match="1 belief"):
        call_command("verify_beliefs", stdout=StringIO())

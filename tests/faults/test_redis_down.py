"""Redis killed: writes go on, a tier change answers 200, and its rebuild runs once Redis is back."""

from __future__ import annotations

import time

from tests.faults.keys import deposit, make_keys
from tests.faults.processes import Atlaso, ThrowawayRedis


def test_with_redis_killed_writes_go_on_and_a_tier_changes_rebuild_runs_once_it_is_back(
    atlaso: Atlaso, redis: ThrowawayRedis
):
    atlaso.redis_url = redis.url
    atlaso.extra_env["JOB_SWEEP_SECONDS"] = "1"  # beat's sweep, every second rather than every minute
    agent, admin = make_keys(atlaso)
    atlaso.start_web()
    atlaso.start_worker()
    atlaso.start_beat()
    for user in ("alice", "bob"):
        observed = atlaso.call(
            "POST", f"/users/{user}/beliefs/coffee/observations", {"value": "4 oz"}, key=agent
        )
        assert observed.status == 201, observed.body

    redis.kill()
    for n in range(5):
        added = atlaso.call(
            "POST", "/users/alice/deposits", deposit(f"written without a broker {n}"), key=agent,
            headers={"Idempotency-Key": f"no-broker-{n}"},
        )  # fmt: skip
        assert added.status == 201, added.body
    started = time.monotonic()
    changed = atlaso.call("PUT", "/tiers/agent_own", {"ceiling": 0.4}, key=admin)
    took = time.monotonic() - started
    # Committed with its run: the answer says so and names the run, which waits for a broker.
    assert changed.status == 200, changed.body
    assert changed.body["ceiling"] == 0.4
    rebuild = changed.body["rebuild"]
    assert (rebuild["status"], rebuild["total"], rebuild["done"]) == ("queued", 2, 0)
    assert took < 10, f"the tier change took {took:.1f} s without a broker"
    time.sleep(2)  # several of beat's sweeps, none of which can reach a worker
    assert atlaso.call("GET", f"/jobs/{rebuild['id']}", key=admin).body["status"] == "queued"
    assert atlaso.call("GET", "/users/alice/beliefs/coffee", key=agent).body["fact"] == "4 oz"

    redis.start()
    run = atlaso.wait_for_run(rebuild["id"], admin)
    assert (run["status"], run["error"], run["done"], run["total"]) == ("succeeded", None, 2, 2), run
    assert (run["name"], run["trigger"]) == ("rebuild_beliefs", "tier_change")
    # agent_own at 0.4 is below the pivot: its facts no longer hold.
    assert atlaso.call("GET", "/users/alice/beliefs/coffee", key=agent).body["fact"] is None
    verify = atlaso.call("POST", "/jobs/verify_beliefs/runs", key=admin)
    assert verify.status == 202, verify.body
    verified = atlaso.wait_for_run(verify.body["id"], admin)
    assert (verified["status"], verified["counts"]["mismatched"]) == ("succeeded", 0), verified
    listed = atlaso.call("GET", "/users/alice/deposits?limit=50", key=agent).body
    assert sum(item["content"].startswith("written without a broker") for item in listed["items"]) == 5

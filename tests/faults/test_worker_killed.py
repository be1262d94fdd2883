"""A worker killed with kill -9 during a rebuild: a new one finishes the run, beliefs replay equal.

Every belief then equals its log's replay.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.faults.keys import make_keys
from tests.faults.processes import Atlaso, ThrowawayRedis, wait_for

# Beliefs from identical evidence, enough that rebuilding them takes several seconds (about 10
# on a loaded 2-core machine); progress is on record after the first second.
BELIEFS = 1200

SEED = f"""
from beliefs.models import Belief, BeliefRevision
from atlaso_site.access.models import Channel
from beliefs.services import observation_record

channel = Channel.objects.select_related("tier").get(name="agent-a")
first = observation_record(user_id="owner-0", key="k-0", value="4 oz", channel=channel)
revision = BeliefRevision.objects.get(pk=first.revision.pk)
belief = Belief.objects.get(user_id="owner-0", key="k-0")


def copy(row, **changes):
    fields = {{f.attname: getattr(row, f.attname) for f in row._meta.concrete_fields if not f.primary_key}}
    return type(row)(**{{**fields, **changes}})


others = [(f"owner-{{n // 100}}", f"k-{{n}}") for n in range(1, {BELIEFS})]
BeliefRevision.objects.bulk_create([copy(revision, user_id=u, belief_key=k) for u, k in others], batch_size=1000)
Belief.objects.bulk_create([copy(belief, user_id=u, key=k) for u, k in others], batch_size=1000)
result = Belief.objects.count()
"""


def test_a_worker_killed_during_a_rebuild_leaves_the_same_run_to_a_new_worker_which_finishes_it(
    atlaso: Atlaso, redis: ThrowawayRedis
):
    atlaso.redis_url = redis.url
    # A run is lost after 5 s without a heartbeat (not 30), beating every second, and beat
    # sweeps every second (not every minute).
    atlaso.extra_env.update(
        JOB_HEARTBEAT_SECONDS="1", JOB_HEARTBEAT_LOST_AFTER_SECONDS="5", JOB_SWEEP_SECONDS="1"
    )
    _, admin = make_keys(atlaso)  # the agent key's channel, agent-a, is the one seeded
    assert atlaso.django(SEED) == BELIEFS
    atlaso.start_web()
    atlaso.start_worker()
    atlaso.start_beat()

    changed = atlaso.call("PUT", "/tiers/agent_own", {"ceiling": 0.4}, key=admin)
    assert changed.status == 200, changed.body
    rebuild = changed.body["rebuild"]
    assert rebuild["total"] == BELIEFS
    path = f"/jobs/{rebuild['id']}"
    wait_for(
        lambda: atlaso.call("GET", path, key=admin).body,
        lambda run: run["done"] > 0,
        timeout=60,
        what="the rebuild to make progress",
    )
    atlaso.kill("worker")
    killed = atlaso.call("GET", path, key=admin).body
    assert killed["status"] == "running" and 0 < killed["done"] < BELIEFS, killed
    # Half rebuilt: beliefs from identical evidence answer two different probabilities.
    assert atlaso.sql("SELECT count(DISTINCT probability) FROM beliefs_belief") == [(2,)]

    atlaso.start_worker("worker-2")
    run = atlaso.wait_for_run(rebuild["id"], admin, timeout=120)
    assert (run["status"], run["error"], run["done"], run["total"]) == (
        "succeeded",
        None,
        BELIEFS,
        BELIEFS,
    ), run
    assert run["counts"]["beliefs"] == BELIEFS
    assert atlaso.sql("SELECT attempts FROM jobs_jobrun WHERE id = %s", (rebuild["id"],)) == [(2,)]
    assert atlaso.sql("SELECT count(DISTINCT probability) FROM beliefs_belief") == [(1,)]
    verify = atlaso.call("POST", "/jobs/verify_beliefs/runs", key=admin)
    assert verify.status == 202, verify.body
    verified = atlaso.wait_for_run(verify.body["id"], admin, timeout=120)
    assert (verified["status"], verified["counts"]["mismatched"]) == ("succeeded", 0), verified
    assert verified["counts"]["checked"] == BELIEFS


def test_a_rebuild_whose_pool_process_was_killed_is_taken_again_by_the_next_one_and_finishes_in_time(
    atlaso: Atlaso, redis: ThrowawayRedis, capsys: pytest.CaptureFixture[str]
):
    # Every setting as it is by default: a heartbeat every 5 s, lost after 30 s without one,
    # beat sweeping every minute. The worker runs a pool, as `make run`'s does.
    atlaso.redis_url = redis.url
    _, admin = make_keys(atlaso)
    assert atlaso.django(SEED) == BELIEFS
    atlaso.start_web()
    worker = atlaso.start_worker(pool="prefork")
    atlaso.start_beat()

    changed = atlaso.call("PUT", "/tiers/agent_own", {"ceiling": 0.4}, key=admin)
    assert changed.status == 200, changed.body
    path = f"/jobs/{changed.body['rebuild']['id']}"
    wait_for(
        lambda: atlaso.call("GET", path, key=admin).body,
        lambda run: run["done"] > 0,
        timeout=60,
        what="the rebuild to make progress",
    )
    [pool_process] = Path(f"/proc/{worker.pid}/task/{worker.pid}/children").read_text().split()
    os.kill(int(pool_process), signal.SIGKILL)
    killed = time.monotonic()
    assert atlaso.sql("SELECT count(DISTINCT probability) FROM beliefs_belief") == [(2,)]

    # The worker's main process starts another pool process and hands the message out again at
    # once; that delivery watches the run's heartbeat, stopped with the killed process, and takes
    # the run once it is lost.
    run = atlaso.wait_for_run(changed.body["rebuild"]["id"], admin, timeout=120)
    finished_after = time.monotonic() - killed
    with capsys.disabled():
        print(f"\n[worker killed] the rebuild whose pool process was killed ended {run['status']} "
              f"{finished_after:.1f} s after the kill, attempt 2 of the same run")  # fmt: skip
    assert (run["status"], run["error"], run["done"], run["total"]) == ("succeeded", None, BELIEFS, BELIEFS)
    assert finished_after < 120
    assert atlaso.sql("SELECT attempts FROM jobs_jobrun WHERE id = %s", (run["id"],)) == [(2,)]
    assert worker.poll() is None

    verified = atlaso.manage("verify_beliefs")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert f"checked {BELIEFS}, mismatched 0" in verified.stdout, verified.stdout

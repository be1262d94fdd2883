"""A small world for the diagnostics pages: owners with bags, a conflict, a belief, snapshots, runs."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.test import Client
from django.utils import timezone

from atlaso_site.job_runs.models import JobRun
from atlaso_site.job_runs.services import job_record
from beliefs.services import channel_get_or_create
from deposits.domain.validation import validate_deposit
from deposits.services.deposits import deposit_add
from diagnostics.models import Snapshot
from tests.cast import make_login
from tests.deposits.scenario import put

XSS = "<script>alert(1)</script>"


def logged_in(role: str) -> Client:
    client = Client()
    client.force_login(make_login(role))
    return client


def conflict(user: str = "alice", env: str = "prod") -> None:
    """A bag of `user` split between a positive and a negative claim."""
    scope = {"model": "gpt-5", "dataset": "evals", "env": env}
    put("positive", f"threshold 0.7 holds in {env}", scope, user=user)
    put("negative", f"threshold 0.7 fails in {env}", scope, user=user)


def agreeing(user: str = "alice", env: str = "staging", count: int = 3) -> None:
    """A confident bag: `count` positive claims in one scope."""
    scope = {"model": "gpt-5", "dataset": "evals", "env": env}
    for i in range(count):
        put("positive", f"backoff fixed the export in {env} (run {i})", scope, user=user)


def belief(
    user: str = "alice", key: str = "diet:milk", value: str = "oat milk", *, tier: str = "user_direct"
) -> None:
    """A deposit carrying a belief; `user_direct` asserts it, `web_fetch` leaves it uncertain."""
    channel = channel_get_or_create(name=f"test-{tier}", tier_name=tier).name
    deposit_add(
        draft=validate_deposit(
            user, {"content": f"{user} takes {value}", "belief": {"key": key, "value": value}}
        ),
        channel=channel,
    )


def snapshots(user: str | None, fmis: list[int], *, step: timedelta = timedelta(hours=1)) -> list[Snapshot]:
    """Snapshots of `user` (None: the deployment), one per step up to now, the last marked latest."""
    now = timezone.now()
    Snapshot.objects.filter(user_id=user).update(is_latest=False)
    rows = []
    for i, fmi in enumerate(fmis):
        share = fmi / 100
        rows.append(
            Snapshot(
                user_id=user,
                taken_at=now - step * (len(fmis) - 1 - i),
                window_days=30,
                fmi=fmi,
                coverage=share,
                precision=share,
                resolution=1.0,
                density=share,
                deposit_count=10 + i,
                bag_count=5,
                conflict_bag_count=i % 3,
                uncertain_belief_count=1,
                recall_count=4,
                owner_count=2 if user is None else None,
                is_latest=i == len(fmis) - 1,
            )
        )
    return Snapshot.objects.bulk_create(rows)


def run(name: str, *, status: str = "succeeded", at: datetime | None = None, **fields) -> JobRun:
    """A run on record, as the runner leaves it."""
    recorded = job_record(name=name, trigger=fields.pop("trigger", "command"))
    moment = at or timezone.now()
    updates = {"status": status, "queued_at": moment, **fields}
    if status != "queued":
        updates.setdefault("started_at", moment)
        updates.setdefault("heartbeat_at", moment)
    if status in ("succeeded", "failed", "skipped"):
        updates.setdefault("finished_at", moment + timedelta(seconds=3))
    JobRun.objects.filter(pk=recorded.pk).update(**updates)
    return JobRun.objects.get(pk=recorded.pk)

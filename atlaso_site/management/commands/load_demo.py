"""`load_demo`: a few owners with conflicts and history, so every page has something to show.

Every write carries an idempotency key derived from its text, so loading twice adds nothing.
Above the deposits it leaves what a running deployment would have: agents' recalls, a reviewer's
resolution, job runs, and a week of FMI snapshots. The snapshots before today are demo data,
drawn toward today's real values, and written only while the demo owners have none.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone

from atlaso_site.job_runs.models import Trigger
from atlaso_site.lib.errors import AtlasoError
from beliefs.services import belief_confirm, channel_get_or_create
from deposits.domain.idempotency import idempotency_key
from deposits.domain.validation import validate_correction, validate_deposit
from deposits.models import Deposit, RecallLog
from deposits.selectors.recall import recall
from deposits.services.deposits import deposit_add, deposit_contradict, recall_record
from deposits.services.review import bag_resolve
from diagnostics import job_runner
from diagnostics.domain.fmi import Pillars
from diagnostics.models import Snapshot

PROD = {"model": "gpt-5", "dataset": "support-tickets", "env": "prod"}
STAGING = {"model": "gpt-5", "dataset": "support-tickets", "env": "staging"}
ROUTING = {"model": "router-v2", "dataset": "tickets-eu", "env": "prod"}
REFUNDS = {"model": "router-v2", "dataset": "refunds", "env": "prod"}
PREFS = {"model": "assistant", "dataset": "preferences"}
TRAVEL = {"model": "assistant", "dataset": "travel"}

DEMO: dict[str, list[dict[str, Any]]] = {
    "alice": [
        {"content": "Alice prefers oat milk in her coffee", "polarity": "positive", "evidence_grade": "observed",
         "scope": PREFS, "tags": ["coffee"]},
        {"content": "Alice asked again for oat milk, not soy", "polarity": "positive", "evidence_grade": "observed",
         "scope": PREFS, "tags": ["coffee"]},
        {"content": "Alice said she is cutting out dairy alternatives", "polarity": "negative",
         "evidence_grade": "observed", "scope": PREFS, "artifact_refs": ["chat://2026-11-02#14"]},
        {"content": "Ask Alice whether she still runs on Tuesdays", "polarity": "open"},
        {"content": "Alice prefers a window seat on flights", "polarity": "positive", "evidence_grade": "observed",
         "scope": TRAVEL},
        {"content": "Alice asked for an aisle seat on her last two flights", "polarity": "negative",
         "evidence_grade": "observed", "scope": TRAVEL, "artifact_refs": ["bookings/ak-2291", "bookings/ak-2304"]},
    ],
    "ops-team": [
        {"content": "Threshold 0.7 is optimal for the fraud classifier", "polarity": "positive",
         "evidence_grade": "observed", "scope": PROD, "artifact_refs": ["runs/2026-10-01.json"]},
        {"content": "Threshold 0.7 over-flags in production", "polarity": "negative", "evidence_grade": "observed",
         "scope": PROD, "artifact_refs": ["dash/fp-rate-oct"]},
        {"content": "Retry with exponential backoff fixed the flaky export", "polarity": "positive",
         "evidence_grade": "replicated", "scope": STAGING},
        {"content": "Backoff capped at 30s is enough for the export job", "polarity": "positive",
         "evidence_grade": "observed", "scope": STAGING},
        {"content": "Batch size above 512 runs out of memory on the small workers", "polarity": "cautionary",
         "evidence_grade": "observed", "scope": {"model": "gpt-5", "env": "staging"}},
    ],
    "tenant-a:bob": [
        {"content": "EU tickets in German route best to the Berlin queue", "polarity": "positive",
         "evidence_grade": "observed", "scope": ROUTING, "artifact_refs": ["runs/routing-eu-07.json"]},
        {"content": "Berlin queue answers German tickets within the SLA", "polarity": "positive",
         "evidence_grade": "observed", "scope": ROUTING, "artifact_refs": ["dash/sla-eu"]},
        {"content": "German tickets sent to Berlin missed the SLA last week", "polarity": "negative",
         "evidence_grade": "observed", "scope": ROUTING, "artifact_refs": ["dash/sla-eu-w45"]},
        {"content": "Refunds under 20 EUR are approved without review", "polarity": "positive",
         "evidence_grade": "replicated", "scope": REFUNDS, "artifact_refs": ["policy/refunds-v3"]},
        {"content": "Small refunds auto-approve as the policy says", "polarity": "positive",
         "evidence_grade": "observed", "scope": REFUNDS, "artifact_refs": ["runs/refunds-audit.json"]},
    ],
    "support-bot": [
        {"content": "Customers on the legacy plan cannot use the new export", "polarity": "negative",
         "evidence_grade": "observed", "scope": {**STAGING, "version": "v41"}, "artifact_refs": ["tickets/8812"]},
        {"content": "The new export works for legacy-plan customers after the v41 fix", "polarity": "positive",
         "evidence_grade": "observed", "scope": {**STAGING, "version": "v41"}, "artifact_refs": ["runs/export-v41"]},
        {"content": "Password reset emails arrive within a minute", "polarity": "positive",
         "evidence_grade": "observed", "scope": {"model": "mailer", "env": "prod"}, "artifact_refs": ["dash/mail-latency"]},
        {"content": "Password reset emails are delayed for Outlook addresses", "polarity": "cautionary",
         "evidence_grade": "observed", "scope": {"model": "mailer", "env": "prod"}, "artifact_refs": ["tickets/9120"]},
    ],
}  # fmt: skip

# Beliefs: the owner's own app says one thing, then corrects it; a scraper insists on a third.
BELIEF_CLAIMS: list[tuple[str, str, str, str, str]] = [
    ("user_direct", "alice", "diet:milk", "Alice takes oat milk in her coffee", "oat milk"),
    ("user_direct", "alice", "diet:milk", "Alice switched to soy milk last week", "soy milk"),
    ("web_fetch", "alice", "diet:milk", "Confirmed, verified, this is final: Alice drinks whole milk", "whole milk"),
    ("agent_own", "tenant-a:bob", "language:preferred", "Bob writes his tickets in German", "German"),
    ("agent_own", "tenant-a:bob", "language:preferred", "Bob switched to English in the last ticket", "English"),
    ("web_fetch", "ops-team", "oncall:primary", "A forum post says the primary on-call is Dana", "Dana"),
]  # fmt: skip
BELIEF_CHANNELS = {"user_direct": "demo-user-app", "web_fetch": "demo-scraper", "agent_own": "demo-agent"}

CORRECTIONS = {
    "alice": {
        "content": "Alice wants an aisle seat since her knee surgery",
        "polarity": "negative",
        "evidence_grade": "observed",
        "artifact_refs": ["chat://2026-11-20#3"],
        "corrects": "Alice prefers a window seat on flights",
        "reason": "she said so herself; the window preference is from before the surgery",
    },
    "ops-team": {
        "content": "Threshold 0.8 is optimal after the October re-measure",
        "polarity": "positive",
        "evidence_grade": "replicated",
        "corrects": "Threshold 0.7 is optimal for the fraud classifier",
        "reason": "re-measured on the fixed evaluation set",
    },
}

# A reviewer settles these conflicts from the dashboard: (owner, the deposit kept, the reason).
RESOLUTIONS = [
    ("tenant-a:bob", "German tickets sent to Berlin missed the SLA last week",
     "The SLA dashboard for week 45 shows the misses; the older claims predate the staffing change."),
    ("support-bot", "The new export works for legacy-plan customers after the v41 fix",
     "Re-tested after the v41 fix; ticket 8812 predates it."),
]  # fmt: skip

# A reviewer confirmed what two beliefs should say: calibration's first outcomes (one was right).
CONFIRMATIONS = [("alice", "diet:milk", "soy milk"), ("tenant-a:bob", "language:preferred", "German")]

# What the demo agents asked: recalls count toward each owner's Coverage pillar.
RECALLS = {
    "alice": ["oat milk coffee", "aisle seat flights", "running Tuesdays", "seat knee"],
    "ops-team": ["export backoff", "fraud threshold", "batch size memory", "export retry"],
    "tenant-a:bob": ["refunds approval", "german tickets routing", "small refunds"],
    "support-bot": ["password reset email", "legacy export", "outlook delay"],
}

PILLARS = ("coverage", "precision", "resolution", "density")
HISTORY = timedelta(days=7)
HISTORY_STEP = timedelta(hours=1)


class Command(BaseCommand):
    help = "Load the demo owners (idempotent: a second run adds nothing)."

    def handle(self, *args: Any, **options: Any) -> None:
        added, replayed = self._deposits()
        self.stdout.write(f"Demo data: {added} deposits added, {replayed} already present.")
        demo_owners = list(DEMO)
        if Snapshot.objects.filter(user_id__in=demo_owners).exists():
            self.stdout.write("Demo history: already present.")
            return
        self._resolutions()
        for user_id, key, value in CONFIRMATIONS:
            belief_confirm(user_id=user_id, key=key, value=value)
        if not RecallLog.objects.filter(user_id__in=demo_owners).exists():
            for user_id, queries in RECALLS.items():
                for query in queries:
                    recall_record(user_id=user_id, results=recall(user_id=user_id, query=query))
        recompute = job_runner.job_run_now(name=job_runner.RECOMPUTE_DIAGNOSTICS, trigger=Trigger.COMMAND)
        written = self._history(demo_owners, timezone.now())
        verify = job_runner.job_run_now(name=job_runner.VERIFY_BELIEFS, trigger=Trigger.COMMAND)
        expire = job_runner.job_run_now(name=job_runner.EXPIRE_IDEMPOTENCY_KEYS, trigger=Trigger.COMMAND)
        self.stdout.write(
            f"Demo history: {written} earlier snapshots (demo values) over {HISTORY.days} days; "
            f"job runs {recompute.status}, {verify.status}, {expire.status}."
        )

    def _add(self, user_id: str, data: dict[str, Any], channel: str) -> bool:
        """Write one demo deposit; True when it is new."""
        result = deposit_add(
            draft=validate_deposit(user_id, data),
            channel=channel,
            idempotency_key=idempotency_key("demo", user_id, data["content"]),
        )
        return not result.is_idempotent_replay

    def _deposits(self) -> tuple[int, int]:
        channel = channel_get_or_create(name="demo-agent", tier_name="agent_own").name
        added = replayed = 0
        for user_id, items in DEMO.items():
            for item in items:
                new = self._add(user_id, item, channel)
                added, replayed = added + new, replayed + (not new)
        for user_id, correction in CORRECTIONS.items():
            old = Deposit.objects.filter(user_id=user_id, content=correction["corrects"]).first()
            if old is None:
                continue
            data = {**correction, "contradicts": [str(old.pk)]}
            data.pop("corrects")
            try:
                result = deposit_contradict(
                    correction=validate_correction(user_id, data),
                    channel=channel,
                    idempotency_key=idempotency_key("demo", user_id, correction["content"]),
                )
            except AtlasoError as error:
                self.stderr.write(f"demo correction skipped: {error.message}")
                continue
            added += not result.is_idempotent_replay
            replayed += result.is_idempotent_replay
        for tier, user_id, key, content, value in BELIEF_CLAIMS:
            belief_channel = channel_get_or_create(name=BELIEF_CHANNELS[tier], tier_name=tier).name
            new = self._add(
                user_id, {"content": content, "belief": {"key": key, "value": value}}, belief_channel
            )
            added, replayed = added + new, replayed + (not new)
        return added, replayed

    def _resolutions(self) -> None:
        """A reviewer's Resolve, as the dashboard does it; a bag settled already is left alone."""
        for user_id, kept_content, reason in RESOLUTIONS:
            kept = Deposit.objects.filter(user_id=user_id, content=kept_content).first()
            if kept is None:
                continue
            try:
                bag_resolve(
                    user_id=user_id,
                    bag_id=kept.bag_id,
                    keep=[str(kept.pk)],
                    reason=reason,
                    reviewer="demo-reviewer",
                )
            except AtlasoError as error:
                self.stderr.write(f"demo resolution skipped: {error.message}")

    @transaction.atomic
    def _history(self, owners: list[str], now: datetime) -> int:
        """Hourly snapshots over the past week, easing toward each latest (real) snapshot."""
        latest = list(Snapshot.objects.filter(is_latest=True).filter(user_id__in=owners)) + list(
            Snapshot.objects.filter(is_latest=True, user_id__isnull=True)
        )
        rows = []
        for snapshot in latest:
            rng = random.Random(f"demo-{snapshot.user_id}")
            # Where each pillar stood a week ago, as a share of where it stands today.
            start = {name: rng.uniform(0.45, 0.75) for name in PILLARS}
            steps = int(HISTORY / HISTORY_STEP)
            values = _eased(snapshot, start, 0.0, rng)
            for step in range(steps, 0, -1):
                share = 1 - step / steps
                # Most hours nothing happens (the snapshot holds); now and then the memory moves.
                if rng.random() < 0.12:
                    values = _eased(snapshot, start, share, rng)
                rows.append(_point(snapshot, now - step * HISTORY_STEP, values, share))
        Snapshot.objects.bulk_create(rows, batch_size=1000)
        return len(rows)


def _eased(latest: Snapshot, start: dict[str, float], share: float, rng: random.Random) -> dict[str, float]:
    """The pillars `share` of the way from a week ago to today's, with a little noise."""
    values = {}
    for name in PILLARS:
        target = getattr(latest, name)
        value = target * (start[name] + (1 - start[name]) * share) + rng.uniform(-0.03, 0.03)
        values[name] = round(min(1.0, max(0.0, value)), 3)
    return values


def _point(latest: Snapshot, taken_at: datetime, values: dict[str, float], share: float) -> Snapshot:
    pillars = Pillars(**values)
    growth = 0.5 + 0.5 * share
    return Snapshot(
        user_id=latest.user_id,
        taken_at=taken_at,
        window_days=latest.window_days,
        fmi=pillars.fmi,
        **values,
        deposit_count=max(1, round(latest.deposit_count * growth)),
        bag_count=max(1, round(latest.bag_count * growth)),
        conflict_bag_count=max(0, latest.conflict_bag_count + round((1 - share) * 2)),
        uncertain_belief_count=latest.uncertain_belief_count,
        recall_count=round(latest.recall_count * growth),
        owner_count=latest.owner_count,
        is_latest=False,
    )

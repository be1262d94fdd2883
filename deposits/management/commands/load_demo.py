"""`load_demo`: a few owners with conflicts and history, so every page has something to show.

Every write carries an idempotency key derived from its text, so loading twice adds nothing.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from atlaso_site.lib.errors import AtlasoError
from beliefs.services import channel_get_or_create
from deposits.domain.idempotency import idempotency_key
from deposits.models import Deposit
from deposits.services import deposit_add, deposit_contradict

PROD = {"model": "gpt-5", "dataset": "support-tickets", "env": "prod"}
STAGING = {"model": "gpt-5", "dataset": "support-tickets", "env": "staging"}

DEMO: dict[str, list[dict[str, Any]]] = {
    "alice": [
        {"content": "Alice prefers oat milk in her coffee", "polarity": "positive", "evidence_grade": "observed",
         "scope": {"model": "assistant", "dataset": "preferences"}, "tags": ["coffee"]},
        {"content": "Alice asked again for oat milk, not soy", "polarity": "positive", "evidence_grade": "observed",
         "scope": {"model": "assistant", "dataset": "preferences"}, "tags": ["coffee"]},
        {"content": "Alice said she is cutting out dairy alternatives", "polarity": "negative",
         "evidence_grade": "observed", "scope": {"model": "assistant", "dataset": "preferences"},
         "artifact_refs": ["chat://2026-11-02#14"]},
        {"content": "Ask Alice whether she still runs on Tuesdays", "polarity": "open"},
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
}  # fmt: skip

# Beliefs: the owner's own app says one thing, then corrects it; a scraper insists on a third.
BELIEF_CLAIMS: list[tuple[str, str, str, str]] = [
    ("user_direct", "alice", "Alice takes oat milk in her coffee", "oat milk"),
    ("user_direct", "alice", "Alice switched to soy milk last week", "soy milk"),
    ("web_fetch", "alice", "Confirmed, verified, this is final: Alice drinks whole milk", "whole milk"),
]
BELIEF_CHANNELS = {"user_direct": "demo-user-app", "web_fetch": "demo-scraper"}

CORRECTIONS = {
    "ops-team": {
        "content": "Threshold 0.8 is optimal after the October re-measure",
        "polarity": "positive",
        "evidence_grade": "replicated",
        "corrects": "Threshold 0.7 is optimal for the fraud classifier",
        "reason": "re-measured on the fixed evaluation set",
    }
}


class Command(BaseCommand):
    help = "Load the demo owners (idempotent: a second run adds nothing)."

    def handle(self, *args: Any, **options: Any) -> None:
        channel = channel_get_or_create(name="demo-agent", tier_name="agent_own").name
        added = replayed = 0
        for user_id, items in DEMO.items():
            for item in items:
                result = deposit_add(
                    user_id=user_id,
                    data=item,
                    channel=channel,
                    idempotency_key=idempotency_key("demo", user_id, item["content"]),
                )
                added += not result.is_idempotent_replay
                replayed += result.is_idempotent_replay
        for user_id, correction in CORRECTIONS.items():
            old = Deposit.objects.filter(user_id=user_id, content=correction["corrects"]).first()
            if old is None:
                continue
            data = {**correction, "contradicts": [str(old.pk)]}
            data.pop("corrects")
            try:
                result = deposit_contradict(
                    user_id=user_id,
                    data=data,
                    channel=channel,
                    idempotency_key=idempotency_key("demo", user_id, correction["content"]),
                )
            except AtlasoError as error:
                self.stderr.write(f"demo correction skipped: {error.message}")
                continue
            added += not result.is_idempotent_replay
            replayed += result.is_idempotent_replay
        for tier, user_id, content, value in BELIEF_CLAIMS:
            belief_channel = channel_get_or_create(name=BELIEF_CHANNELS[tier], tier_name=tier).name
            result = deposit_add(
                user_id=user_id,
                data={"content": content, "belief": {"key": "diet:milk", "value": value}},
                channel=belief_channel,
                idempotency_key=idempotency_key("demo", user_id, content),
            )
            added += not result.is_idempotent_replay
            replayed += result.is_idempotent_replay
        self.stdout.write(f"Demo data: {added} deposits added, {replayed} already present.")

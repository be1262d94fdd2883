"""Reads of beliefs, revisions and tiers."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.utils import timezone

from beliefs.domain import rule
from beliefs.domain.rule import BeliefState, Verdict
from beliefs.errors import ApiError
from beliefs.models import Belief, BeliefRevision, ProvenanceTier
from beliefs.services import replay_observations, rule_settings


def _verdict(row: Belief, now: datetime) -> Verdict:
    state = BeliefState() if row.state.get("empty") else BeliefState.from_json(row.state)
    return rule.verdict(state, rule_settings(), belief_key=row.key, now=now)


def belief_verdict(*, user_id: str, key: str, now: datetime | None = None) -> Verdict:
    row = Belief.objects.filter(user_id=user_id, key=key).first()
    if row is None:
        raise ApiError("not_found", f"no belief {key!r} for user {user_id!r}")
    return _verdict(row, now or timezone.now())


def verdicts_for(*, user_id: str, keys: Iterable[str], now: datetime | None = None) -> dict[str, Verdict]:
    """Verdicts of several keys in one query (recall uses it for its hits)."""
    now = now or timezone.now()
    return {row.key: _verdict(row, now) for row in Belief.objects.filter(user_id=user_id, key__in=set(keys))}


def belief_page(
    *, user_id: str, uncertain: bool | None = None, limit: int = 50, offset: int = 0
) -> dict[str, Any]:
    rows = Belief.objects.filter(user_id=user_id)
    if uncertain is not None:
        rows = rows.filter(is_uncertain=uncertain)
    total = rows.count()
    now = timezone.now()
    items = [_verdict(row, now).to_dict() for row in rows.order_by("key")[offset : offset + limit]]
    return {"kind": "belief_page", "items": items, "total": total}


def revision_to_dict(revision: BeliefRevision, verdict: Verdict | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "kind": "belief_revision",
        "belief_key": revision.belief_key,
        "value": revision.value,
        "observed_at": revision.observed_at.isoformat(timespec="microseconds"),
        "sequence": revision.id,
        "channel": revision.channel,
        "tier": revision.tier,
        "ceiling": revision.ceiling,
        "taint_tier": revision.taint_tier,
        "content_confidence": revision.content_confidence,
        "reliability": revision.reliability,
        "likelihood_ratio": revision.likelihood_ratio,
        "floor": revision.floor,
        "lifted": revision.lifted,
        "effective": revision.effective,
        "prior": revision.prior,
        "posterior": revision.posterior,
        "shift": revision.shift,
        "deposit_id": str(revision.deposit_id) if revision.deposit_id else None,
        "source_id": revision.source_id,
    }
    if verdict is not None:
        data["verdict"] = verdict.to_dict()
    return data


def revision_page(*, user_id: str, key: str, limit: int = 50, offset: int = 0) -> dict[str, Any]:
    """A belief's log in claim-time order (ties by arrival), the order it is folded in."""
    rows = BeliefRevision.objects.filter(user_id=user_id, belief_key=key)
    total = rows.count()
    if total == 0:
        raise ApiError("not_found", f"no belief {key!r} for user {user_id!r}")
    page = list(rows.order_by("observed_at", "id")[offset : offset + limit])
    after = _verdicts_after(user_id, key, page, timezone.now())
    items = [revision_to_dict(r, after[r.id]) for r in page]
    return {"kind": "revision_page", "items": items, "total": total, "limit": limit, "offset": offset}


def _verdicts_after(user_id: str, key: str, page: list[BeliefRevision], now: datetime) -> dict[int, Verdict]:
    """The verdict after each revision of `page` (claim-time order): the live log replayed up to it.

    A withdrawn revision is not in the replay, so the verdict after it is the one before it.
    """
    knobs = rule_settings()
    log = replay_observations(user_id, key)
    state, folded, verdicts = BeliefState(), 0, {}
    for revision in page:
        position = (revision.observed_at, revision.id)
        while folded < len(log) and (log[folded].observed_at, log[folded].sequence) <= position:
            state, _ = rule.apply(state, log[folded], knobs)
            folded += 1
        verdicts[revision.id] = rule.verdict(state, knobs, belief_key=key, now=now)
    return verdicts


def tier_to_dict(tier: ProvenanceTier) -> dict[str, Any]:
    return {
        "name": tier.name,
        "ceiling": tier.ceiling,
        "description": tier.description,
        "channels": sorted(channel.name for channel in tier.channels.all()),
    }


def tier_list() -> dict[str, Any]:
    tiers = ProvenanceTier.objects.prefetch_related("channels").order_by("-ceiling", "name")
    return {"kind": "tier_list", "items": [tier_to_dict(t) for t in tiers]}

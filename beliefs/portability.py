"""An owner's belief log leaving and arriving whole (portability.md), and forgotten whole.

Observations and outcomes are exported as the log holds them; an import appends them to the
log and derives each belief again by the rule (a replay, as `belief_rebuild` stores it), so the
imported owner's verdicts are the exported owner's wherever the tiers are the same.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from itertools import batched
from typing import Any

from django.db import connection, transaction

from atlaso_site.access.models import DEFAULT_CHANNEL_TIER
from atlaso_site.lib.idempotency import WINDOW
from atlaso_site.lib.timefmt import isoformat
from beliefs.domain import rule
from beliefs.domain.rule import Observation
from beliefs.domain.values import normalize_value
from beliefs.models import Belief, BeliefRevision, CalibrationOutcome, ObservationKey, WithdrawnDeposit
from beliefs.services import (
    _lock_belief,
    belief_rebuild,
    channel_ceilings,
    replay_observations,
    rule_settings,
    tier_ceilings,
)
from beliefs.tombstones import observation_keys_tombstone_owner

# Rows read from the database at a time while exporting (a server-side cursor on PostgreSQL).
CHUNK = 2000

_REVISION_COLUMNS = (
    "id", "belief_key", "value", "observed_at", "arrived_at", "channel", "tier", "ceiling", "taint_tier",
    "content_confidence", "reliability", "likelihood_ratio", "floor", "lifted", "effective", "prior",
    "posterior", "shift", "deposit_id", "source_id",
)  # fmt: skip


def _revisions(user_id: str, *, include_withdrawn: bool) -> Any:
    revisions = BeliefRevision.objects.filter(user_id=user_id)
    if not include_withdrawn:
        revisions = revisions.exclude(
            deposit_id__in=WithdrawnDeposit.objects.filter(user_id=user_id).values("deposit_id")
        )
    return revisions


def observation_count(user_id: str, *, include_withdrawn: bool) -> int:
    return _revisions(user_id, include_withdrawn=include_withdrawn).count()


def outcome_count(user_id: str) -> int:
    return CalibrationOutcome.objects.filter(user_id=user_id).count()


def observation_lines(user_id: str, *, include_withdrawn: bool, now: datetime) -> Iterator[dict[str, Any]]:
    """Every observation of the owner in arrival order, as the API shows a revision.

    Each with its idempotency key while the key is within its window. `include_withdrawn`: those of
    soft-retracted deposits too (the import withdraws them again from the retraction lines).
    """
    rows = (
        _revisions(user_id, include_withdrawn=include_withdrawn)
        .order_by("id")
        .values_list(*_REVISION_COLUMNS)
        .iterator(chunk_size=CHUNK)
    )
    for chunk in batched(rows, CHUNK):
        keys = {
            revision: (key, payload_hash)
            for revision, key, payload_hash in ObservationKey.objects.filter(
                user_id=user_id, revision_id__in=[row[0] for row in chunk], created_at__gt=now - WINDOW
            ).values_list("revision_id", "key", "payload_hash")
        }
        for row in chunk:
            line = dict(zip(_REVISION_COLUMNS, row, strict=True))
            sequence = line.pop("id")
            line["observed_at"] = isoformat(line["observed_at"])
            line["arrived_at"] = isoformat(line["arrived_at"])
            line["deposit_id"] = None if line["deposit_id"] is None else str(line["deposit_id"])
            out = {"kind": "observation", "sequence": sequence, **line}
            if sequence in keys:
                out["idempotency_key"], out["idempotency_payload_hash"] = keys[sequence]
            yield out


def outcome_lines(user_id: str) -> Iterator[dict[str, Any]]:
    """Every calibration outcome of the owner, oldest first."""
    rows = (
        CalibrationOutcome.objects.filter(user_id=user_id)
        .order_by("created_at", "id")
        .values_list(
            "belief_key", "confirmed_value", "confirmed_by", "created_at", "top_value", "top_probability",
            "correct", "tier", "verdict_before",
        )
        .iterator(chunk_size=CHUNK)
    )  # fmt: skip
    for key, value, by, at, top, probability, correct, tier, before in rows:
        yield {
            "kind": "outcome", "belief_key": key, "confirmed_value": value, "confirmed_by": by,
            "created_at": isoformat(at), "top_value": top, "top_probability": probability,
            "correct": correct, "tier": tier, "verdict_before": before,
        }  # fmt: skip


# --- Import -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ObservationDraft:
    """An observation line, checked: what the log will hold of it.

    Its deposit is already mapped to the deposit the import wrote.
    """

    key: str
    value: str
    observed_at: datetime
    channel: str
    tier: str
    ceiling: float
    taint_tier: str | None
    content_confidence: float | None
    deposit_id: str | None
    source_id: str | None
    idempotency_key: str | None = None
    payload_hash: str | None = None
    # When the key was first used: the revision's arrival where it was written.
    key_used_at: datetime | None = None


def known_tiers() -> dict[str, float]:
    """The tiers of this deployment by name, with their ceilings."""
    return tier_ceilings()


def observations_append(
    *, user_id: str, drafts: Sequence[ObservationDraft], retracted: Sequence[str] = (), now: datetime
) -> list[int]:
    """Append the drafts to their beliefs' logs in order and derive each belief again.

    Returns the revisions' ids in the drafts' order. `retracted`: the drafts' deposits that are
    soft-retracted already, whose observations leave the replay as a retraction takes them out.

    A revision's facts are those the rule gives it folded into its key's log as it stands (the
    log's own record, as when an observation arrives late); the stored state is then the replay
    of the live log, withdrawn deposits left out.
    """
    knobs, channels, tiers = rule_settings(), channel_ceilings(), tier_ceilings()
    untrusted = tiers.get(DEFAULT_CHANNEL_TIER)
    by_key: dict[str, list[int]] = {}
    for index, draft in enumerate(drafts):
        by_key.setdefault(draft.key, []).append(index)
    ids: list[int] = [0] * len(drafts)
    for key, indexes in by_key.items():
        _lock_belief(user_id, key, now)
        log = replay_observations(user_id, key)
        new = [
            _observation(drafts[i], channels, tiers, untrusted, sequence=2**62 + position)
            for position, i in enumerate(indexes)
        ]
        ordered = rule.claim_order([*log, *new])
        _, steps = rule.fold(ordered, knobs)
        facts = {observation.sequence: step for observation, step in zip(ordered, steps, strict=True)}
        rows = [
            BeliefRevision(
                user_id=user_id, belief_key=key, value=drafts[i].value, observed_at=drafts[i].observed_at,
                arrived_at=now, channel=drafts[i].channel, tier=drafts[i].tier, ceiling=drafts[i].ceiling,
                taint_tier=drafts[i].taint_tier, content_confidence=drafts[i].content_confidence,
                deposit_id=drafts[i].deposit_id, source_id=drafts[i].source_id,
                **asdict(facts[2**62 + position]),
            )
            for position, i in enumerate(indexes)
        ]  # fmt: skip
        BeliefRevision.objects.bulk_create(rows)
        for i, row in zip(indexes, rows, strict=True):
            ids[i] = row.pk
    if retracted:
        WithdrawnDeposit.objects.bulk_create(
            [WithdrawnDeposit(user_id=user_id, deposit_id=d, withdrawn_at=now) for d in retracted],
            ignore_conflicts=True,
        )
    _claim_imported_keys(user_id, drafts, ids, now)
    for key in by_key:
        belief_rebuild(user_id=user_id, key=key, now=now)
    return ids


def _observation(
    draft: ObservationDraft,
    channels: dict[str, float],
    tiers: dict[str, float],
    untrusted: float | None,
    *,
    sequence: int,
) -> Observation:
    """A draft as the rule folds it, with the ceilings this deployment gives its tiers.

    Its channel's and taint tier's ceilings; an unknown taint tier counts as the default channel
    tier's.
    """
    return Observation(
        value=draft.value,
        observed_at=draft.observed_at,
        ceiling=channels.get(draft.channel, draft.ceiling),
        taint_ceiling=None if draft.taint_tier is None else tiers.get(draft.taint_tier, untrusted),
        content_confidence=draft.content_confidence,
        sequence=sequence,
    )


def observations_withdraw_deposits(*, user_id: str, deposit_ids: Sequence[str], now: datetime) -> set[str]:
    """Withdraw the observations of soft-retracted deposits arriving by import from every replay.

    Now and later. Returns the belief keys they touched (already in the log), rebuilt here.
    """
    if not deposit_ids:
        return set()
    WithdrawnDeposit.objects.bulk_create(
        [WithdrawnDeposit(user_id=user_id, deposit_id=d, withdrawn_at=now) for d in deposit_ids],
        ignore_conflicts=True,
    )
    keys = set(
        BeliefRevision.objects.filter(user_id=user_id, deposit_id__in=list(deposit_ids))
        .values_list("belief_key", flat=True)
        .distinct()
    )
    for key in sorted(keys):
        belief_rebuild(user_id=user_id, key=key, now=now)
    return keys


def _claim_imported_keys(
    user_id: str, drafts: Sequence[ObservationDraft], ids: Sequence[int], now: datetime
) -> None:
    """Claim the observations' idempotency keys for the rest of their window from their first use.

    So a client's retry after the move replays the imported revision; a key this owner holds already
    stays as it is.
    """
    rows = [
        ObservationKey(
            user_id=user_id, key=draft.idempotency_key, payload_hash=draft.payload_hash or "",
            revision_id=revision, created_at=draft.key_used_at or now,
        )
        for draft, revision in zip(drafts, ids, strict=True)
        if draft.idempotency_key and (draft.key_used_at or now) > now - WINDOW
    ]  # fmt: skip
    if rows:
        ObservationKey.objects.bulk_create(rows, ignore_conflicts=True)


@dataclass(frozen=True, slots=True)
class OutcomeDraft:
    key: str
    confirmed_value: str
    confirmed_by: str | None
    created_at: datetime
    top_value: str | None = None
    top_probability: float | None = None
    tier: str | None = None
    verdict_before: dict[str, Any] | None = None


def outcomes_import(*, user_id: str, drafts: Sequence[OutcomeDraft]) -> list[bool]:
    """Record the outcomes this owner does not hold yet; per draft, whether it was written.

    An outcome is held when one has the same key, value and time. An outcome without the verdict
    before it gets the verdict the owner's log gives just before its time.
    """
    if not drafts:
        return []
    held = set(
        CalibrationOutcome.objects.filter(
            user_id=user_id,
            belief_key__in={d.key for d in drafts},
            created_at__in={d.created_at for d in drafts},
        ).values_list("belief_key", "confirmed_value", "created_at")
    )
    written: list[bool] = []
    rows = []
    for draft in drafts:
        mark = (draft.key, draft.confirmed_value, draft.created_at)
        if mark in held:
            written.append(False)
            continue
        held.add(mark)
        before = draft.verdict_before or _verdict_before(user_id, draft.key, draft.created_at)
        top_value, top_probability = _top_before(draft, before)
        rows.append(
            CalibrationOutcome(
                user_id=user_id, belief_key=draft.key, confirmed_value=draft.confirmed_value,
                top_value=top_value, top_probability=top_probability,
                correct=top_value is not None and normalize_value(top_value) == normalize_value(draft.confirmed_value),
                tier=draft.tier, verdict_before=before, confirmed_by=draft.confirmed_by, created_at=draft.created_at,
            )
        )  # fmt: skip
        written.append(True)
    CalibrationOutcome.objects.bulk_create(rows)
    return written


def _top_before(draft: OutcomeDraft, before: dict[str, Any]) -> tuple[str | None, float]:
    """The value the verdict before the outcome put first, and its probability.

    As the draft says when it brought its verdict, else as that verdict's distribution has them.
    """
    distribution = list((before.get("distribution") or {}).items())
    top_value = draft.top_value if draft.verdict_before else (distribution[0][0] if distribution else None)
    top_probability = (
        draft.top_probability
        if draft.verdict_before and draft.top_probability is not None
        else (distribution[0][1] if distribution else 0.0)
    )
    return top_value, top_probability


def _verdict_before(user_id: str, key: str, at: datetime) -> dict[str, Any]:
    log = [o for o in replay_observations(user_id, key) if o.observed_at < at]
    knobs = rule_settings()
    state, _ = rule.fold(log, knobs)
    return rule.verdict(state, knobs, belief_key=key, now=at).to_json()


# --- Forget -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BeliefsForgotten:
    observations: int
    beliefs: int
    keys_tombstoned: int


def beliefs_forget_owner(*, user_id: str, now: datetime) -> BeliefsForgotten:
    """Delete the owner's belief log and state, outcomes and withdrawn marks; tombstone its keys.

    In the caller's transaction; its observation keys become tombstones (beliefs.tombstones).
    """
    with transaction.atomic():
        keys = observation_keys_tombstone_owner(user_id, now)
        beliefs = Belief.objects.filter(user_id=user_id).count()
        observations = BeliefRevision.objects.filter(user_id=user_id).count()
        with connection.cursor() as cursor:
            for model in (BeliefRevision, WithdrawnDeposit, Belief, CalibrationOutcome):
                cursor.execute(f"DELETE FROM {model._meta.db_table} WHERE user_id = %s", [user_id])
    return BeliefsForgotten(observations=observations, beliefs=beliefs, keys_tombstoned=keys)


__all__ = [
    "BeliefsForgotten",
    "ObservationDraft",
    "OutcomeDraft",
    "beliefs_forget_owner",
    "known_tiers",
    "observation_count",
    "observation_lines",
    "observations_append",
    "observations_withdraw_deposits",
    "outcome_count",
    "outcome_lines",
    "outcomes_import",
]

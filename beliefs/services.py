"""Writes for provenance and beliefs: channels, API keys, observations, rebuilds, confirmations."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime

from django.conf import settings
from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from atlaso_site.access.models import DEFAULT_CHANNEL_TIER, PERMISSIONS, ApiKey, Channel, ProvenanceTier
from atlaso_site.job_runs import Progress, no_progress
from atlaso_site.job_runs.models import JobRun, Trigger
from atlaso_site.job_runs.services import job_enqueue
from atlaso_site.lib.errors import NOT_FOUND, VALIDATION_ERROR, AtlasoError
from atlaso_site.lib.forgotten import erased
from atlaso_site.lib.idempotency import (
    WINDOW,
    idempotency_conflict,
    payload_fingerprint,
    validate_idempotency_key,
)
from atlaso_site.lib.secrets import hash_secret, new_secret
from atlaso_site.lib.text import is_blank
from beliefs.domain import rule
from beliefs.domain.rule import BeliefState, Observation, RevisionFacts, RuleSettings, Verdict
from beliefs.domain.values import (
    CEILING_RULE,
    BeliefInputError,
    clean_belief_key,
    clean_content_confidence,
    clean_observed_at,
    clean_value,
    is_ceiling,
    normalize_value,
)
from beliefs.models import (
    HUMAN_REVIEW_CHANNEL,
    Belief,
    BeliefRevision,
    CalibrationOutcome,
    ObservationKey,
    ProvenanceChange,
    WithdrawnDeposit,
)
from beliefs.tombstones import observation_key_forgotten

DEFAULT_PERMISSIONS = ("read", "write")
MAX_SOURCE_ID = 200
# The job that replays beliefs; a tier or channel change records a run of it.
REBUILD_BELIEFS = "rebuild_beliefs"
# How many differing keys a verify run lists in its counts (it counts them all).
MAX_LISTED_MISMATCHES = 1000
# Who made a provenance change when the caller does not say (demo data, benchmarks, tests).
SYSTEM_ACTOR = "system"


class ProvenanceError(AtlasoError):
    """An operator asked for something the provenance rules forbid."""

    def __init__(self, message: str, *, code: str = VALIDATION_ERROR, **details: object) -> None:
        super().__init__(code, message, **details)


def channel_get_or_create(*, name: str, tier_name: str | None = None, actor: str = SYSTEM_ACTOR) -> Channel:
    """The channel called `name`; created on `tier_name` (default untrusted) when new.

    Naming a tier for an existing channel bound to another tier is an error: rebinding
    changes the trust of everything the channel wrote, so it is a separate, deliberate act.
    """
    channel = Channel.objects.select_related("tier").filter(name=name).first()
    if channel is not None:
        if tier_name is not None and channel.tier.name != tier_name:
            raise ProvenanceError(
                f"channel {name!r} is bound to tier {channel.tier.name!r}, not {tier_name!r}; "
                "rebind it in the dashboard or admin, or leave the tier out"
            )
        return channel
    tier = ProvenanceTier.objects.filter(name=tier_name or DEFAULT_CHANNEL_TIER).first()
    if tier is None:
        known = ", ".join(ProvenanceTier.objects.values_list("name", flat=True))
        raise ProvenanceError(f"there is no tier {tier_name!r}; the tiers are: {known}")
    with transaction.atomic():
        channel, created = Channel.objects.get_or_create(name=name, defaults={"tier": tier})
        if created:
            _record_change(actor, ProvenanceChange.Action.CHANNEL_CREATE, name, f"on tier {tier.name}")
    return channel


def _record_change(
    actor: str, action: str, subject: str, detail: str = "", run: JobRun | None = None
) -> None:
    """Append one line to the provenance history, in the change's own transaction."""
    ProvenanceChange.objects.create(
        at=timezone.now(),
        actor=actor[:200] or SYSTEM_ACTOR,
        action=action,
        subject=subject[:200],
        detail=detail[:500],
        rebuild_run_id=None if run is None else run.pk,
    )


@transaction.atomic
def api_key_create(
    *,
    name: str,
    channel_name: str,
    tier_name: str | None = None,
    permissions: Iterable[str] = (),
    user_prefix: str = "",
    actor: str = SYSTEM_ACTOR,
) -> tuple[ApiKey, str]:
    """Create a key and return it with its secret, which is never stored and never shown again."""
    chosen = tuple(dict.fromkeys(permissions)) or DEFAULT_PERMISSIONS
    unknown = [p for p in chosen if p not in PERMISSIONS]
    if unknown:
        raise ProvenanceError(
            f"unknown permission {unknown[0]!r}; the permissions are {', '.join(PERMISSIONS)}"
        )
    if is_blank(name):
        raise ProvenanceError("an API key needs a name, so people can tell keys apart")
    channel = channel_get_or_create(name=channel_name, tier_name=tier_name, actor=actor)
    secret = new_secret()
    key = ApiKey.objects.create(
        name=name.strip(),
        channel=channel,
        secret_hash=hash_secret(secret),
        display_prefix=secret[:12],
        permissions=list(chosen),
        user_prefix=user_prefix,
    )
    confined = f", confined to user_ids starting {user_prefix!r}" if user_prefix else ""
    _record_change(
        actor,
        ProvenanceChange.Action.API_KEY_CREATE,
        key.name,
        f"key {key.display_prefix}… on channel {channel.name} (tier {channel.tier.name}), "
        f"permissions {', '.join(key.permissions)}{confined}",
    )
    return key, secret


def api_key_revoke(*, key: ApiKey, actor: str = SYSTEM_ACTOR) -> ApiKey:
    """Revoke a key from now on; revoking twice keeps the first time (and records only it)."""
    if key.revoked_at is None:
        now = timezone.now()
        with transaction.atomic():
            revoked = ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=now)
            if revoked:
                _record_change(
                    actor, ProvenanceChange.Action.API_KEY_REVOKE, key.name, f"key {key.display_prefix}…"
                )
        key.revoked_at = (
            now if revoked else ApiKey.objects.values_list("revoked_at", flat=True).get(pk=key.pk)
        )
    return key


# --- Beliefs -------------------------------------------------------------------------------


def rule_settings() -> RuleSettings:
    """The rule's knobs from settings (BELIEF_*)."""
    half_life = settings.BELIEF_DECAY_HALF_LIFE_DAYS
    return RuleSettings(
        default_content_confidence=settings.BELIEF_DEFAULT_CONTENT_CONFIDENCE,
        hedge_floor=settings.BELIEF_HEDGE_FLOOR,
        volatility=settings.BELIEF_VOLATILITY,
        decay_half_life_days=half_life or None,
        uncertainty_threshold=settings.BELIEF_UNCERTAINTY_THRESHOLD,
    )


def tier_ceilings() -> dict[str, float]:
    return dict(ProvenanceTier.objects.values_list("name", "ceiling"))


def channel_ceilings() -> dict[str, float]:
    return dict(Channel.objects.values_list("name", "tier__ceiling"))


def _taint_ceiling(taint_tier: str | None, tiers: dict[str, float]) -> float | None:
    if taint_tier is None:
        return None
    if taint_tier not in tiers:
        raise BeliefInputError(
            "taint_tier", f"there is no tier {taint_tier!r}; the tiers are: {', '.join(sorted(tiers))}"
        )
    return tiers[taint_tier]


def _lock_belief(user_id: str, key: str, now: datetime) -> Belief:
    """The belief row, created when new, locked until the transaction ends (one writer per key)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO beliefs_belief (user_id, key, state, probability, is_uncertain, observation_count, updated_at) "
            "VALUES (%s, %s, %s, 0, %s, 0, %s) ON CONFLICT (user_id, key) DO NOTHING",
            [user_id, key, '{"empty": true}', True, connection.ops.adapt_datetimefield_value(now)],
        )
    return Belief.objects.select_for_update().get(user_id=user_id, key=key)


def _state_of(row: Belief) -> BeliefState:
    return BeliefState() if row.state.get("empty") else BeliefState.from_json(row.state)


def _store(row: Belief, state: BeliefState, *, now: datetime) -> Verdict:
    """Save a state and the verdict columns lists filter on."""
    verdict = rule.verdict(state, rule_settings(), belief_key=row.key, now=now)
    row.state = state.to_json()
    row.fact = verdict.fact
    row.probability = verdict.probability
    row.is_uncertain = verdict.is_uncertain
    row.observation_count = state.observation_count
    row.updated_at = now
    row.save(
        update_fields=[
            "state",
            "fact",
            "probability",
            "is_uncertain",
            "observation_count",
            "last_observed_at",
            "updated_at",
        ]
    )
    return verdict


def replay_observations(user_id: str, key: str) -> list[Observation]:
    """The key's live log as observations, with today's ceilings (withdrawn deposits left out)."""
    channels, tiers = channel_ceilings(), tier_ceilings()
    withdrawn = WithdrawnDeposit.objects.filter(user_id=user_id).values("deposit_id")
    revisions = (
        BeliefRevision.objects.filter(user_id=user_id, belief_key=key)
        .exclude(deposit_id__in=withdrawn)
        .order_by("observed_at", "id")
    )
    return [
        Observation(
            value=revision.value,
            observed_at=revision.observed_at,
            # A channel that no longer exists keeps the ceiling it had when it spoke.
            ceiling=channels.get(revision.channel, revision.ceiling),
            taint_ceiling=None
            if revision.taint_tier is None
            else tiers.get(revision.taint_tier, tiers.get(DEFAULT_CHANNEL_TIER)),
            content_confidence=revision.content_confidence,
            sequence=revision.id,
        )
        for revision in revisions
    ]


@dataclass(frozen=True, slots=True)
class RecordedObservation:
    revision: BeliefRevision
    verdict: Verdict
    is_idempotent_replay: bool = False


@dataclass(frozen=True, slots=True)
class _Checked:
    """An observation's inputs, checked and cleaned before anything is written."""

    key: str
    value: str
    observed_at: datetime
    sent_observed_at: datetime | None
    confidence: float | None
    taint_tier: str | None
    taint_ceiling: float | None
    source_id: str | None

    def fingerprint(self) -> str:
        """The payload as sent, for its idempotency key.

        A retry that omits the claim time again is the same payload, though "now" has moved.
        """
        return payload_fingerprint(
            {
                "belief_key": self.key,
                "value": self.value,
                "observed_at": self.sent_observed_at.isoformat() if self.sent_observed_at else None,
                "content_confidence": self.confidence,
                "taint_tier": self.taint_tier,
                "source_id": self.source_id,
            }
        )


def _checked(
    *, key: str, value: str, observed_at: datetime | None, content_confidence: float | None,
    taint_tier: str | None, source_id: str | None, now: datetime,
) -> _Checked:  # fmt: skip
    """Check an observation's inputs; raises BeliefInputError (nothing written) for bad input."""
    key = clean_belief_key(key)
    display = clean_value(value)
    confidence = clean_content_confidence(content_confidence)
    claimed_at = clean_observed_at(observed_at or now, now=now)
    taint_ceiling = _taint_ceiling(taint_tier, tier_ceilings())
    if source_id is not None and len(source_id) > MAX_SOURCE_ID:
        raise BeliefInputError(
            "source_id", f"source_id is {len(source_id)} characters; the limit is {MAX_SOURCE_ID}"
        )
    return _Checked(
        key=key, value=display, observed_at=claimed_at, sent_observed_at=observed_at, confidence=confidence,
        taint_tier=taint_tier, taint_ceiling=taint_ceiling, source_id=source_id,
    )  # fmt: skip


def observation_record(
    *,
    user_id: str,
    key: str,
    value: str,
    channel: Channel,
    observed_at: datetime | None = None,
    content_confidence: float | None = None,
    taint_tier: str | None = None,
    source_id: str | None = None,
    deposit_id: str | None = None,
    idempotency_key: str | None = None,
    now: datetime | None = None,
) -> RecordedObservation:
    """Append one observation to a belief's log and fold it into the stored state.

    In claim-time order the state is updated incrementally; a claim older than the newest
    one already folded replays the key's log from scratch, so order of arrival never matters.
    With an idempotency key, a retry within 24 hours replays the original revision and writes
    nothing; the key with another payload is 409. Raises BeliefInputError (nothing written)
    for bad input.
    """
    now = now or timezone.now()
    checked = _checked(
        key=key, value=value, observed_at=observed_at, content_confidence=content_confidence,
        taint_tier=taint_tier, source_id=source_id, now=now,
    )  # fmt: skip
    idempotency_key = validate_idempotency_key(idempotency_key)
    with transaction.atomic():
        if idempotency_key is not None:
            replayed = _claim_key(user_id, idempotency_key, checked, now)
            if replayed is not None:
                return replayed
        revision, verdict = _record(user_id, checked, channel=channel, deposit_id=deposit_id, now=now)
        if idempotency_key is not None:
            ObservationKey.objects.filter(user_id=user_id, key=idempotency_key).update(revision=revision)
    # What the API's Out schema reads off the revision, beside its own fields.
    revision.verdict, revision.is_idempotent_replay = verdict, False
    return RecordedObservation(revision=revision, verdict=verdict)


def _record(
    user_id: str, checked: _Checked, *, channel: Channel, deposit_id: str | None, now: datetime
) -> tuple[BeliefRevision, Verdict]:
    """Fold the observation into the belief (locked until the transaction ends) and log its revision."""
    knobs = rule_settings()
    row = _lock_belief(user_id, checked.key, now)
    observation = Observation(
        value=checked.value, observed_at=checked.observed_at, ceiling=channel.tier.ceiling,
        taint_ceiling=checked.taint_ceiling, content_confidence=checked.confidence, sequence=2**62,
    )  # fmt: skip
    in_order = row.last_observed_at is None or checked.observed_at >= row.last_observed_at
    if in_order:
        state, facts = rule.apply(_state_of(row), observation, knobs)
    else:
        log = replay_observations(user_id, checked.key)
        state, steps = rule.fold([*log, observation], knobs)
        ordered = rule.claim_order([*log, observation])
        facts = steps[ordered.index(observation)]
    revision = _append_revision(
        user_id=user_id, key=checked.key, value=checked.value, observed_at=checked.observed_at, now=now,
        channel=channel, taint_tier=checked.taint_tier, confidence=checked.confidence, facts=facts,
        deposit_id=deposit_id, source_id=checked.source_id,
    )  # fmt: skip
    row.last_observed_at = max(filter(None, [row.last_observed_at, checked.observed_at]))
    return revision, _store(row, state, now=now)


def _claim_key(user_id: str, key: str, checked: _Checked, now: datetime) -> RecordedObservation | None:
    """Claim an observation's idempotency key (None: this call records), or replay its first use.

    The unique (user_id, key) constraint decides: of any number of concurrent claims exactly one
    inserts; the others wait for its transaction, then find its row and its revision. An entry
    past its window is removed first, so correctness never waits for the cleanup job.
    """
    if observation_key_forgotten(user_id, key, now):
        raise erased(key)
    ObservationKey.objects.filter(user_id=user_id, key=key, created_at__lte=now - WINDOW).delete()
    fingerprint = checked.fingerprint()
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO beliefs_observationkey (user_id, key, payload_hash, created_at) "
            "VALUES (%s, %s, %s, %s) ON CONFLICT (user_id, key) DO NOTHING",
            [user_id, key, fingerprint, connection.ops.adapt_datetimefield_value(now)],
        )
        if cursor.rowcount == 1:
            return None
    entry = ObservationKey.objects.select_related("revision").get(user_id=user_id, key=key)
    if entry.revision is None or entry.payload_hash != fingerprint:
        raise idempotency_conflict(key, entry.revision_id)
    revision = entry.revision
    revision.verdict = verdicts_after(user_id, revision.belief_key, [revision], now)[revision.id]
    revision.is_idempotent_replay = True
    return RecordedObservation(revision=revision, verdict=revision.verdict, is_idempotent_replay=True)


def verdicts_after(user_id: str, key: str, page: list[BeliefRevision], now: datetime) -> dict[int, Verdict]:
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


def observation_keys_expire(*, now: datetime) -> int:
    """Delete observation keys past their 24-hour window; how many went (housekeeping only)."""
    deleted, _ = ObservationKey.objects.filter(created_at__lte=now - WINDOW).delete()
    return deleted


def _append_revision(
    *, user_id: str, key: str, value: str, observed_at: datetime, now: datetime, channel: Channel,
    taint_tier: str | None, confidence: float | None, facts: RevisionFacts, deposit_id: str | None, source_id: str | None,
) -> BeliefRevision:  # fmt: skip
    return BeliefRevision.objects.create(
        user_id=user_id,
        belief_key=key,
        value=value,
        observed_at=observed_at,
        arrived_at=now,
        channel=channel.name,
        tier=channel.tier.name,
        ceiling=channel.tier.ceiling,
        taint_tier=taint_tier,
        content_confidence=confidence,
        deposit_id=deposit_id,
        source_id=source_id,
        **asdict(facts),
    )


def belief_rebuild(*, user_id: str, key: str, now: datetime | None = None) -> bool:
    """Replay one key's log with today's tiers and store it; True when the state changed."""
    now = now or timezone.now()
    with transaction.atomic():
        row = _lock_belief(user_id, key, now)
        log = replay_observations(user_id, key)
        if not log:
            row.delete()
            return True
        state, _ = rule.fold(log, rule_settings())
        changed = row.state != state.to_json()
        row.last_observed_at = max(o.observed_at for o in log)
        _store(row, state, now=now)
    return changed


def _keys_of_deposit(user_id: str, deposit_id: str) -> list[str]:
    return list(
        BeliefRevision.objects.filter(user_id=user_id, deposit_id=deposit_id)
        .values_list("belief_key", flat=True)
        .distinct()
    )


def observations_withdraw(*, user_id: str, deposit_id: str) -> None:
    """A deposit was soft-retracted: its observations stop counting; the log keeps them."""
    keys = _keys_of_deposit(user_id, deposit_id)
    if not keys:
        return
    WithdrawnDeposit.objects.get_or_create(
        user_id=user_id, deposit_id=deposit_id, defaults={"withdrawn_at": timezone.now()}
    )
    for key in keys:
        belief_rebuild(user_id=user_id, key=key)


def observations_erase(*, user_id: str, deposit_id: str) -> None:
    """A deposit was erased (GDPR): its observations go too, and the beliefs are replayed."""
    keys = _keys_of_deposit(user_id, deposit_id)
    BeliefRevision.objects.filter(user_id=user_id, deposit_id=deposit_id).delete()
    WithdrawnDeposit.objects.filter(user_id=user_id, deposit_id=deposit_id).delete()
    for key in keys:
        belief_rebuild(user_id=user_id, key=key)


def _touched(channels: Iterable[str] | None) -> QuerySet:
    revisions = BeliefRevision.objects.all()
    if channels is not None:
        revisions = revisions.filter(channel__in=list(channels))
    return revisions.values_list("user_id", "belief_key").distinct()


def affected_keys(channels: Iterable[str] | None) -> list[tuple[str, str]]:
    """(user_id, key) of every belief the channels touched; every belief when channels is None."""
    return list(_touched(channels).order_by("user_id", "belief_key"))


def _rebuild_enqueue(*, trigger: str, channels: Iterable[str]) -> JobRun:
    """Record a rebuild of what the channels touched, sent to a worker once this transaction commits."""
    names = sorted(channels)
    return job_enqueue(
        name=REBUILD_BELIEFS, trigger=trigger, params={"channels": names}, total=_touched(names).count()
    )


def beliefs_rebuild(*, channels: list[str] | None, progress: Progress | None = None) -> dict[str, int]:
    """Replay every belief the channels touched (every belief when None) with today's tiers.

    Each key is replayed and stored in its own transaction, so a run can stop anywhere and
    run again: a replay of a replay changes nothing.
    """
    progress = progress or no_progress
    keys = affected_keys(channels)
    progress(0, len(keys))
    changed = 0
    for done, (user_id, key) in enumerate(keys, start=1):
        changed += belief_rebuild(user_id=user_id, key=key)
        progress(done, len(keys))
    return {"beliefs": len(keys), "rebuilt": len(keys), "changed": changed}


def beliefs_verify(*, progress: Progress | None = None) -> dict[str, object]:
    """Compare every stored state with the replay of its log.

    Counts: `checked`, `mismatched` and `mismatches`, the [user_id, key] of those that differ
    (the first MAX_LISTED_MISMATCHES of them).
    """
    progress = progress or no_progress
    knobs = rule_settings()
    total = Belief.objects.count()
    progress(0, total)
    checked, differing = 0, []
    for row in Belief.objects.order_by("user_id", "key").iterator():
        log = replay_observations(row.user_id, row.key)
        replayed = rule.fold(log, knobs)[0].to_json() if log else None
        if replayed != (None if row.state.get("empty") else row.state):
            differing.append([row.user_id, row.key])
        checked += 1
        progress(checked, max(total, checked))
    return {
        "checked": checked,
        "mismatched": len(differing),
        "mismatches": differing[:MAX_LISTED_MISMATCHES],
    }


def tier_update(
    *, name: str, ceiling: float | None = None, description: str | None = None, actor: str = SYSTEM_ACTOR
) -> tuple[ProvenanceTier, JobRun | None]:
    """Change a tier; a new ceiling rebuilds every belief its channels touched or that cites it as taint."""
    tier = ProvenanceTier.objects.filter(name=name).first()
    if tier is None:
        raise ProvenanceError(f"there is no tier {name!r}", code=NOT_FOUND)
    job = None
    told = []
    with transaction.atomic():
        if description is not None and description[:500] != tier.description:
            tier.description = description[:500]
            told.append("description changed")
        if ceiling is not None:
            if not is_ceiling(ceiling):
                raise ProvenanceError(CEILING_RULE, field="ceiling")
            changed = ceiling != tier.ceiling
            if changed:
                told.insert(0, f"ceiling {tier.ceiling:g} → {ceiling:g}")
            tier.ceiling = ceiling
            tier.save()
            if changed:
                # A taint tier caps r too, so the channels that relayed content under it count.
                # selectors.tier_rebuild_counts spells this rule in SQL, to show the count before.
                relayed = BeliefRevision.objects.filter(taint_tier=name).values_list("channel", flat=True)
                channels = {*tier.channels.values_list("name", flat=True), *relayed.distinct()}
                job = _rebuild_enqueue(trigger=Trigger.TIER_CHANGE, channels=channels)
                told.append(f"{job.total} belief{'' if job.total == 1 else 's'} to rebuild")
        else:
            tier.save()
        if told:
            _record_change(actor, ProvenanceChange.Action.TIER_CHANGE, name, "; ".join(told), job)
    return tier, job


def channel_bind(
    *, name: str, tier_name: str, description: str | None = None, actor: str = SYSTEM_ACTOR
) -> tuple[Channel, JobRun | None]:
    """Create a channel on a tier, or rebind an existing one (which schedules a rebuild)."""
    tier = ProvenanceTier.objects.filter(name=tier_name).first()
    if tier is None:
        raise ProvenanceError(f"there is no tier {tier_name!r}", field="tier")
    with transaction.atomic():
        channel = (
            Channel.objects.select_for_update(of=("self",)).select_related("tier").filter(name=name).first()
        )
        if channel is None:
            channel = Channel.objects.create(name=name, tier=tier, description=(description or "")[:500])
            _record_change(actor, ProvenanceChange.Action.CHANNEL_CREATE, name, f"on tier {tier.name}")
            return channel, None
        job = None
        told = []
        if channel.tier_id != tier.pk:
            told.append(f"tier {channel.tier.name} → {tier.name}")
            channel.tier = tier
            job = _rebuild_enqueue(trigger=Trigger.CHANNEL_CHANGE, channels=[name])
            told.append(f"{job.total} belief{'' if job.total == 1 else 's'} to rebuild")
        if description is not None and description[:500] != channel.description:
            channel.description = description[:500]
            told.append("description changed")
        channel.save()
        if told:
            _record_change(actor, ProvenanceChange.Action.CHANNEL_CHANGE, name, "; ".join(told), job)
    return channel, job


def _tier_behind(user_id: str, key: str, value: str) -> str | None:
    """Today's tier of the channel whose latest effective word in the live replay is `value`.

    The replay, not the log's arrival-time flags: a withdrawn deposit or a channel since
    rebound would name a tier the verdict no longer rests on.
    """
    log = rule.claim_order(replay_observations(user_id, key))
    _, steps = rule.fold(log, rule_settings())
    wanted = normalize_value(value)
    latest = next(
        (o.sequence for o, step in zip(reversed(log), reversed(steps), strict=True)
         if step.effective and normalize_value(o.value) == wanted),
        None,
    )  # fmt: skip
    if latest is None:
        return None
    channel, tier_then = BeliefRevision.objects.values_list("channel", "tier").get(pk=latest)
    return Channel.objects.filter(name=channel).values_list("tier__name", flat=True).first() or tier_then


def belief_confirm(
    *, user_id: str, key: str, value: str, reviewer: str | None = None, now: datetime | None = None
) -> tuple[RecordedObservation, CalibrationOutcome]:
    """A reviewer confirms the true value: a trusted human_review observation, and an outcome.

    The outcome keeps the verdict just before, so calibration scores what the memory said
    when it did not yet know. Both name the reviewer (the dashboard's login), so the revision
    log says whose word moved the belief.
    """
    now = now or timezone.now()
    key = clean_belief_key(key)
    display = clean_value(value)
    channel = Channel.objects.select_related("tier").get(name=HUMAN_REVIEW_CHANNEL)
    with transaction.atomic():
        row = _lock_belief(user_id, key, now)
        before = rule.verdict(_state_of(row), rule_settings(), belief_key=key, now=now)
        top_value, top_probability = before.distribution[0] if before.distribution else (None, 0.0)
        tier = None if top_value is None else _tier_behind(user_id, key, top_value)
        recorded = observation_record(
            user_id=user_id,
            key=key,
            value=display,
            channel=channel,
            content_confidence=1.0,
            source_id=None if reviewer is None else f"confirmed by {reviewer}",
            now=now,
        )
        outcome = CalibrationOutcome.objects.create(
            user_id=user_id,
            belief_key=key,
            confirmed_value=display,
            top_value=top_value,
            top_probability=top_probability,
            correct=top_value is not None and normalize_value(top_value) == normalize_value(display),
            tier=tier,
            verdict_before=before.to_json(),
            confirmed_by=reviewer,
            created_at=now,
        )
    return recorded, outcome

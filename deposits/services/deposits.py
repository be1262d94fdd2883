"""Writes to the store: add, add_many, contradict, retract.

Each write runs the gate, inserts, and keeps bag counts, edges and idempotency entries
right in one transaction, so a failure leaves nothing behind.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from atlaso_site.access.models import Channel, ProvenanceTier
from atlaso_site.job_runs import Progress, no_progress
from atlaso_site.lib.errors import (
    ERASED,
    GATE_REJECTED,
    MISSING_CONTRADICTS,
    NOT_FOUND,
    VALIDATION_ERROR,
    AtlasoError,
    invalid,
    not_found,
)
from atlaso_site.lib.idempotency import idempotency_conflict
from beliefs.domain.values import BeliefInputError, clean_observed_at
from beliefs.services import (
    observation_keys_expire,
    observation_record,
    observations_erase,
    observations_withdraw,
)
from deposits.domain import gate
from deposits.domain.bags import bag_id as compute_bag_id
from deposits.domain.bags import bag_scope
from deposits.domain.idempotency import WINDOW, payload_fingerprint
from deposits.domain.types import BeliefRef, Scope
from deposits.domain.types import Deposit as DepositRecord
from deposits.domain.validation import (
    BeliefClaim,
    BulkDraft,
    BulkItem,
    CorrectionDraft,
    DepositDraft,
    validate_enum,
    validate_idempotency_key,
    validate_scope,
    validate_user_id,
)
from deposits.models import (
    ConflictEpisode,
    Contradiction,
    Deposit,
    IdempotencyEntry,
    RecallLog,
    ResolutionKept,
)
from deposits.search import search_backend
from deposits.selectors.deposits import as_uuid, deposit_record, deposit_records
from deposits.selectors.recall import SearchResults
from deposits.services import embedding
from deposits.services.bag_counts import (
    NewDeposits,
    bags_add_deposits,
    bags_forget_emptied,
    bags_recount,
    search_text,
)
from deposits.services.episodes import Closer, episodes_sync
from deposits.services.owners import Tally, tally_write
from deposits.services.tombstones import forgotten_keys
from deposits.sql.bulk import insert_rows

DEPOSIT_COLUMNS = (
    ("id", "uuid"), ("user_id", "text"), ("bag_id", "text"), ("content", "text"), ("polarity", "text"),
    ("evidence_grade", "text"), ("scope_model", "text"), ("scope_dataset", "text"), ("scope_env", "text"),
    ("scope_version", "text"), ("scope_n", "bigint"), ("scope_seed", "bigint"), ("scope_note", "text"),
    ("tags", "jsonb"), ("artifact_refs", "jsonb"), ("author", "text"), ("author_role", "text"),
    ("task_id", "text"), ("channel", "text"), ("repro_status", "text"), ("belief_key", "text"),
    ("belief_value", "text"), ("created_at", "timestamptz"),
)  # fmt: skip
IDEMPOTENCY_COLUMNS = (
    ("user_id", "text"), ("key", "text"), ("payload_hash", "text"), ("deposit_id", "uuid"), ("created_at", "timestamptz"),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class AddResult:
    deposit: DepositRecord
    is_idempotent_replay: bool

    @property
    def id(self) -> str:
        return self.deposit.id


@dataclass(frozen=True, slots=True)
class BulkReject:
    """A bulk item that was not written: its place, the item as sent, and why."""

    index: int
    item: Mapping[str, Any]
    error: AtlasoError


@dataclass(frozen=True, slots=True)
class AddManyResult:
    committed: tuple[DepositRecord, ...] = ()
    duplicates: tuple[DepositRecord, ...] = ()
    failed: tuple[BulkReject, ...] = ()
    is_partial: bool = False

    @property
    def total(self) -> int:
        return len(self.committed) + len(self.duplicates) + len(self.failed)

    @property
    def all_succeeded(self) -> bool:
        return not self.failed


@dataclass(frozen=True, slots=True)
class RetractResult:
    deposit_id: str
    mode: str
    contradicts_preserved: tuple[str, ...] = field(default=())


# The scope as `asdict` gives it (its fields are plain values), without its deep copy.
_SCOPE_FIELDS = tuple(f.name for f in fields(Scope))


def _fingerprint(draft: DepositDraft, reason: str) -> str:
    return payload_fingerprint(
        {
            "content": draft.content,
            "polarity": draft.polarity,
            "evidence_grade": draft.evidence_grade,
            "scope": {name: getattr(draft.scope, name) for name in _SCOPE_FIELDS},
            "tags": list(draft.tags),
            "artifact_refs": list(draft.artifact_refs),
            "contradicts": list(draft.contradicts),
            "author": draft.author,
            "author_role": draft.author_role,
            "task_id": draft.task_id,
            "repro_status": draft.repro_status,
            "belief": _belief_fingerprint(draft.belief),
            "reason": reason,
        }
    )


def _belief_fingerprint(claim: BeliefClaim | None) -> dict[str, Any] | None:
    """The belief part of a payload's fingerprint; its form is stored, so it never changes."""
    if claim is None:
        return None
    return {
        "key": claim.key,
        "value": claim.value,
        "content_confidence": claim.content_confidence,
        "taint_tier": claim.taint_tier,
        "observed_at": claim.observed_at.isoformat() if claim.observed_at else None,
    }


@dataclass(frozen=True, slots=True)
class _Committed:
    """The item was written by this call, as `deposit_id`."""

    deposit_id: uuid.UUID


@dataclass(frozen=True, slots=True)
class _Replayed:
    """The item's key and payload were written before: its answer is that deposit, read back."""

    deposit_id: uuid.UUID


@dataclass(frozen=True, slots=True)
class _Failed:
    """The item was refused, and wrote nothing."""

    error: AtlasoError


type _Outcome = _Committed | _Replayed | _Failed


@dataclass
class _Pending:
    """One write on its way through `_write_batch`, and what became of it."""

    draft: DepositDraft
    key: str | None
    reason: str = ""
    deposit_id: uuid.UUID = field(default_factory=uuid.uuid4)
    fingerprint: str = ""
    # Set once decided.
    outcome: _Outcome | None = None
    # Another item of the same batch with the same key and payload: this one replays it.
    follows: _Pending | None = None

    def fail(self, error: AtlasoError) -> None:
        self.outcome = _Failed(error)


def _gate(draft: DepositDraft) -> AtlasoError | None:
    decision = gate.judge(draft)
    if decision.accepted:
        return None
    return AtlasoError(
        GATE_REJECTED, f"the gate refused this claim: {decision.reason}", gate_reason=decision.reason
    )


def _lock_targets(user_id: str, pending: Sequence[_Pending]) -> dict[str, Deposit]:
    """The contradicted deposits, locked in id order before any bag row.

    A retraction locks its deposit first too, so a concurrent retraction or erasure runs
    wholly before or after this write (an erased id is then missing), never deadlocks with it.
    """
    wanted = {u for p in pending for raw in p.draft.contradicts if (u := as_uuid(raw)) is not None}
    if not wanted:
        return {}
    rows = (
        Deposit.objects.filter(user_id=user_id, id__in=wanted)
        .only(
            "id",
            "bag_id",
            "scope_model",
            "scope_dataset",
            "scope_env",
            "scope_version",
            "scope_n",
            "scope_seed",
            "scope_note",
        )
        .select_for_update(no_key=True)
        .order_by("pk")
    )
    return {str(row.pk): row for row in rows}


def _missing_targets(raw_ids: Sequence[str], found: Mapping[str, Deposit]) -> list[str]:
    return [raw for raw in raw_ids if str(as_uuid(raw)) not in found]


def _missing_error(missing: list[str]) -> AtlasoError:
    return AtlasoError(
        MISSING_CONTRADICTS,
        "contradicts lists ids that are not deposits of this user; check the ids "
        "(an erased deposit cannot be contradicted, and a batch cannot contradict its own items)",
        missing=missing,
    )


def _key_owners(pending: Sequence[_Pending]) -> dict[str, _Pending]:
    """The first item of the batch for each key; later items replay it or conflict with it."""
    owners: dict[str, _Pending] = {}
    for item in pending:
        if item.key is None or item.outcome is not None:
            continue
        item.fingerprint = _fingerprint(item.draft, item.reason)
        first = owners.setdefault(item.key, item)
        if first is item:
            continue
        if first.fingerprint == item.fingerprint:
            item.follows = first
        else:
            item.fail(idempotency_conflict(item.key, first.deposit_id))
    return owners


def _delete_expired_keys(user_id: str, keys: list[str], now: datetime) -> None:
    """On SQLite, delete these keys' entries older than the window before the keys are claimed.

    Removed first, they never make correctness wait for the job. PostgreSQL replaces them as it
    claims instead (_CLAIM_OR_REPLACE_EXPIRED).
    """
    cutoff = connection.ops.adapt_datetimefield_value(now - WINDOW)
    marks = ", ".join(["%s"] * len(keys))
    with connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM deposits_idempotencyentry WHERE user_id = %s AND key IN ({marks}) AND created_at <= %s",
            [user_id, *keys, cutoff],
        )


def _settle_taken_keys(user_id: str, owners: Mapping[str, _Pending], taken: list[str], now: datetime) -> None:
    """Keys another write holds: the same payload is a replay of its deposit, another a conflict."""
    existing = {
        entry.key: entry
        for entry in IdempotencyEntry.objects.filter(
            user_id=user_id, key__in=taken, created_at__gt=now - WINDOW
        )
    }
    for key in taken:
        item, entry = owners[key], existing.get(key)
        if entry is not None and entry.is_erased:
            item.fail(_erased(key))
        elif entry is not None and entry.payload_hash == item.fingerprint and entry.deposit_id is not None:
            item.outcome = _Replayed(entry.deposit_id)
        else:
            item.fail(idempotency_conflict(key, entry.deposit_id if entry else None))


# PostgreSQL replaces an expired entry in the statement that claims its key (the keys of one
# statement are distinct): what _delete_expired_keys then an insert do, in one statement. A
# concurrent claim of the same expired entry waits for this one, then finds it fresh.
_CLAIM_OR_REPLACE_EXPIRED = (
    "ON CONFLICT (user_id, key) DO UPDATE SET payload_hash = excluded.payload_hash, "
    "deposit_id = excluded.deposit_id, created_at = excluded.created_at, erased_at = NULL "
    "WHERE deposits_idempotencyentry.created_at <= excluded.created_at - "
    f"interval '{WINDOW // timedelta(microseconds=1)} microseconds' RETURNING key"
)


def _claim_keys(user_id: str, pending: Sequence[_Pending], now: datetime) -> None:
    """Claim each item's idempotency key, or decide it is a replay or a conflict.

    The unique (user_id, key) constraint decides: of any number of concurrent claims exactly
    one inserts; the others wait for its transaction, then find its row. Entries point at the
    deposit id chosen in advance (the foreign key is checked at commit).
    """
    owners = _key_owners(pending)
    if not owners:
        return
    keys = list(owners)
    if connection.vendor == "postgresql":
        claim = _CLAIM_OR_REPLACE_EXPIRED
    else:
        _delete_expired_keys(user_id, keys, now)
        claim = "ON CONFLICT (user_id, key) DO NOTHING RETURNING key"
    returned = insert_rows(
        "deposits_idempotencyentry",
        IDEMPOTENCY_COLUMNS,
        [(user_id, key, owners[key].fingerprint, owners[key].deposit_id, now) for key in keys],
        claim,
    )
    claimed = {row[0] for row in returned}
    taken = [key for key in keys if key not in claimed]
    if taken:
        _settle_taken_keys(user_id, owners, taken, now)


def _erased(key: str) -> AtlasoError:
    """A key whose deposit was erased: nothing is written under it again within its 24 hours."""
    return AtlasoError(
        ERASED,
        "the deposit this idempotency_key wrote was erased; nothing is written again under this key "
        "within 24 hours of its first use. To record a claim anew, send it with a new key.",
        idempotency_key=key,
    )


def _check_beliefs(pending: Sequence[_Pending], channel: Channel | None, now: datetime) -> None:
    """Belief claims that cannot be recorded fail their item before anything is written."""
    claims = [p for p in pending if p.outcome is None and p.draft.belief is not None]
    if not claims:
        return
    tiers = set(ProvenanceTier.objects.values_list("name", flat=True))
    for item in claims:
        assert item.draft.belief is not None
        try:
            _check_belief(item.draft.belief, channel, tiers, now)
        except BeliefInputError as error:
            item.fail(invalid(f"belief.{error.field}", error.message))


def _check_belief(claim: BeliefClaim, channel: Channel | None, tiers: set[str], now: datetime) -> None:
    """Raise BeliefInputError for a claim the revision log would refuse."""
    if channel is None:
        raise BeliefInputError("belief", "a belief needs the writer's channel; this write has none")
    if claim.taint_tier is not None and claim.taint_tier not in tiers:
        raise BeliefInputError(
            "taint_tier",
            f"there is no tier {claim.taint_tier!r}; the tiers are: {', '.join(sorted(tiers))}",
        )
    clean_observed_at(claim.observed_at or now, now=now)


def _refuse_forgotten_keys(user_id: str, pending: Sequence[_Pending], now: datetime) -> None:
    """Refuse, before anything else, the replays of a forgotten owner's keys.

    Its keys stay tombstones for the rest of their window: what its replays contradicted is gone
    with it.
    """
    forgotten = forgotten_keys(user_id, [item.key for item in pending if item.key is not None], now)
    for item in pending:
        if item.key is not None and item.key in forgotten:
            item.fail(_erased(item.key))


def _write_batch(
    user_id: str, pending: Sequence[_Pending], *, channel_name: str | None, now: datetime, tally: Tally
) -> None:
    """The one write path: targets, keys, deposits, bag counts, edges and beliefs, batched.

    Runs inside the caller's transaction; each item ends with an outcome. Items that fail
    are decided before anything is written, so they leave nothing behind. What it changes for
    the owner is added to `tally`, which the caller writes last (`tally_write`).
    """
    _refuse_forgotten_keys(user_id, pending, now)
    targets = _lock_targets(user_id, pending)
    _refuse_missing_targets(pending, targets)
    channel = _belief_channel(pending, channel_name)
    _check_beliefs(pending, channel, now)
    _claim_keys(user_id, pending, now)
    fresh = [p for p in pending if p.outcome is None and p.follows is None]
    if fresh:
        touched, closers, in_conflict, live = _insert(
            user_id, fresh, channel_name=channel_name, targets=targets, now=now
        )
        opened = episodes_sync(
            user_id=user_id, bag_ids=touched, now=now, closers=closers, in_conflict=in_conflict
        )
        tally.touched(now, live=live, conflicts=opened)
        if channel is not None:
            _record_beliefs(user_id, fresh, channel, now)
        for item in fresh:
            item.outcome = _Committed(item.deposit_id)
    _settle_followers(pending)


def _refuse_missing_targets(pending: Sequence[_Pending], targets: Mapping[str, Deposit]) -> None:
    """An item contradicting a deposit the owner does not hold (any more) fails."""
    for item in pending:
        missing = _missing_targets(item.draft.contradicts, targets)
        if missing and item.outcome is None:
            item.fail(_missing_error(missing))


def _belief_channel(pending: Sequence[_Pending], channel_name: str | None) -> Channel | None:
    """The writer's channel with its tier, read only when an item claims a belief."""
    if channel_name is None or not any(p.draft.belief for p in pending):
        return None
    return Channel.objects.select_related("tier").filter(name=channel_name).first()


def _record_beliefs(user_id: str, written: Sequence[_Pending], channel: Channel, now: datetime) -> None:
    """Each written deposit's belief claim, as an observation of the revision log."""
    for item in written:
        claim = item.draft.belief
        if claim is not None:
            observation_record(
                user_id=user_id, key=claim.key, value=claim.value, channel=channel,
                observed_at=claim.observed_at, content_confidence=claim.content_confidence,
                taint_tier=claim.taint_tier, deposit_id=str(item.deposit_id), now=now,
            )  # fmt: skip


def _settle_followers(pending: Sequence[_Pending]) -> None:
    """Settle each item that repeats an earlier one of its batch (same key and payload).

    It replays the earlier item's deposit, or fails as that item did.
    """
    for item in pending:
        if item.follows is None:
            continue
        leader = item.follows.outcome
        if isinstance(leader, _Committed | _Replayed):
            item.outcome = _Replayed(leader.deposit_id)
        else:
            item.outcome = leader


def _insert(
    user_id: str,
    items: Sequence[_Pending],
    *,
    channel_name: str | None,
    targets: Mapping[str, Deposit],
    now: datetime,
) -> tuple[set[str], dict[str, Closer], set[str] | None, int]:
    """Insert the items, and say what the write changed for the owner's bags and live count.

    Returns the bags whose counts changed; which write may have ended each one's conflict (the first
    deposit of the batch that superseded one of its own); which bags are in conflict now when the
    write only added live deposits (no supersession recounted); and how many more live deposits the
    owner holds.
    """
    by_bag: dict[str, NewDeposits] = {}
    # A batch's items share few scopes: each bag id is hashed once. The key holds each facet's
    # type, so 1 and True (equal as dict keys) could never share an id.
    bag_ids: dict[tuple[object, ...], str] = {}
    rows = []
    for item in items:
        draft, scope = item.draft, item.draft.scope
        facets = scope.facets
        memo = (*facets, *map(type, facets))
        bag = bag_ids.get(memo)
        if bag is None:
            bag = bag_ids[memo] = compute_bag_id(user_id, scope)
        new = by_bag.get(bag)
        if new is None:
            # The bag row holds the facets as bags compare them (NFC); the deposit, as sent.
            new = by_bag[bag] = NewDeposits(bag_scope(scope))
        new.polarities.append((draft.polarity, now))
        new.texts.append(search_text(draft.content, scope.note))
        rows.append(_deposit_row(item, user_id=user_id, bag=bag, channel_name=channel_name, now=now))
    # Bag rows first (the deposits' foreign key points at them), in id order against deadlocks.
    in_conflict: set[str] | None = bags_add_deposits(user_id=user_id, bags=by_bag, now=now)
    insert_rows("deposits_deposit", DEPOSIT_COLUMNS, rows)
    # The database put them in the embedding backlog; their vectors are made after the commit.
    embedding.when_committed()
    closers, revived = _supersede(user_id, items, targets=targets, now=now)
    if closers:
        in_conflict = None  # the recount may have moved any of these bags
    return set(by_bag) | set(closers), closers, in_conflict, len(rows) + revived


def _deposit_row(
    item: _Pending, *, user_id: str, bag: str, channel_name: str | None, now: datetime
) -> tuple[object, ...]:
    """The item's deposits_deposit row, in DEPOSIT_COLUMNS order."""
    draft, scope, belief = item.draft, item.draft.scope, item.draft.belief
    return (
        item.deposit_id, user_id, bag, draft.content, draft.polarity, draft.evidence_grade,
        scope.model, scope.dataset, scope.env, scope.version, scope.n, scope.seed, scope.note,
        list(draft.tags), list(draft.artifact_refs), draft.author, draft.author_role, draft.task_id,
        channel_name, draft.repro_status, belief.key if belief else None, belief.value if belief else None, now,
    )  # fmt: skip


def _supersede(
    user_id: str, items: Sequence[_Pending], *, targets: Mapping[str, Deposit], now: datetime
) -> tuple[dict[str, Closer], int]:
    """Write the items' superseding edges to the deposits they contradict, and recount their bags.

    Returns which write may have ended each bag's conflict, and how many live deposits the recount
    added.
    """
    edges = [
        Contradiction(
            user_id=user_id,
            new_deposit_id=item.deposit_id,
            old_deposit=targets[str(as_uuid(raw))],
            reason=item.reason,
            created_at=now,
        )
        for item in items
        for raw in dict.fromkeys(item.draft.contradicts)
    ]
    if not edges:
        return {}, 0
    Contradiction.objects.bulk_create(edges)
    revived = bags_recount((edge.old_deposit.bag_id for edge in edges), user_id=user_id, now=now)
    closers: dict[str, Closer] = {}
    for edge in edges:
        closers.setdefault(edge.old_deposit.bag_id, (ConflictEpisode.SUPERSESSION, edge.new_deposit_id))
    return closers, revived


def _record_of(item: _Pending, *, channel: str | None, now: datetime) -> DepositRecord:
    """The record of a deposit this call wrote, from what it wrote."""
    draft = item.draft
    return DepositRecord(
        id=str(item.deposit_id), content=draft.content, polarity=draft.polarity, evidence_grade=draft.evidence_grade,
        scope=draft.scope, user_id=draft.user_id, created_at=now, tags=draft.tags,
        contradicts=tuple(dict.fromkeys(str(as_uuid(raw)) for raw in draft.contradicts)),
        artifact_refs=draft.artifact_refs, author=draft.author, author_role=draft.author_role,
        repro_status=draft.repro_status, task_id=draft.task_id, channel=channel,
        belief=BeliefRef(draft.belief.key, draft.belief.value) if draft.belief else None,
    )  # fmt: skip


def _write_one(draft: DepositDraft, *, channel: str | None, key: str | None, reason: str) -> AddResult:
    rejection = _gate(draft)
    if rejection is not None:
        raise rejection
    item = _Pending(draft=draft, key=key, reason=reason)
    item_time = timezone.now()
    with transaction.atomic():
        tally = Tally(draft.user_id)
        _write_batch(draft.user_id, [item], channel_name=channel, now=item_time, tally=tally)
        tally_write(tally)
        outcome = item.outcome
        assert outcome is not None
        if isinstance(outcome, _Failed):
            raise outcome.error
    if isinstance(outcome, _Committed):
        return AddResult(deposit=_record_of(item, channel=channel, now=item_time), is_idempotent_replay=False)
    try:
        replayed = deposit_record(draft.user_id, str(outcome.deposit_id))
    except AtlasoError as error:
        if error.code != NOT_FOUND:
            raise
        # Erased between reading its key and reading it: the key is a tombstone now.
        raise _erased(key or "") from error
    return AddResult(deposit=replayed, is_idempotent_replay=True)


def deposit_add(*, draft: DepositDraft, channel: str | None, idempotency_key: str | None = None) -> AddResult:
    """Add one validated deposit (through the gate); with a key, a retry within 24 h is a replay."""
    return _write_one(draft, channel=channel, key=validate_idempotency_key(idempotency_key), reason="")


def _inherited_scope(user_id: str, draft: DepositDraft) -> DepositDraft:
    """A correction sent without a scope lands in the bag of the first deposit it contradicts."""
    first = Deposit.objects.filter(user_id=user_id, id=as_uuid(draft.contradicts[0])).first()
    if first is None:
        raise _missing_error(_missing_targets(draft.contradicts, {}))
    inherited = validate_scope(
        {
            "model": first.scope_model,
            "dataset": first.scope_dataset,
            "env": first.scope_env,
            "version": first.scope_version,
            "n": first.scope_n,
            "seed": first.scope_seed,
            "note": first.scope_note,
        }
    )
    return replace(draft, scope=inherited)


def deposit_contradict(
    *, correction: CorrectionDraft, channel: str | None, idempotency_key: str | None = None
) -> AddResult:
    """Write a correction that supersedes the listed deposits; scope defaults to the first one's."""
    draft = correction.draft
    key = validate_idempotency_key(idempotency_key)
    if key is not None and forgotten_keys(draft.user_id, [key], timezone.now()):
        raise _erased(key)
    if correction.inherits_scope:
        draft = _inherited_scope(draft.user_id, draft)
    return _write_one(draft, channel=channel, key=key, reason=correction.reason)


def _judged(item: BulkItem) -> _Pending | BulkReject:
    """A validated bulk item judged by the gate: on its way to the batch, or the reason it was refused."""
    if item.draft is None:
        assert item.error is not None
        return BulkReject(index=item.index, item=item.sent, error=item.error)
    rejection = _gate(item.draft)
    if rejection is not None:
        return BulkReject(index=item.index, item=item.sent, error=rejection)
    return _Pending(draft=item.draft, key=item.key)


def _write_bulk(user_id: str, pending: Sequence[_Pending], *, channel: str | None, now: datetime) -> None:
    """Write the batch at once; on a database error, item by item, each in its own savepoint.

    The owner's tally is written once, last, with what the savepoints that held added."""
    written = Tally(user_id)
    try:
        with transaction.atomic():
            _write_batch(user_id, pending, channel_name=channel, now=now, tally=written)
    except IntegrityError:
        written = Tally(user_id)
        for item in pending:
            item.outcome, item.follows = None, None
            attempt = Tally(user_id)
            try:
                with transaction.atomic():
                    _write_batch(user_id, [item], channel_name=channel, now=now, tally=attempt)
            except IntegrityError as error:
                item.fail(AtlasoError(VALIDATION_ERROR, f"the database refused this item: {error}"))
            else:
                written.absorb(attempt)
    tally_write(written)


def _bulk_result(
    user_id: str,
    pending: Sequence[_Pending],
    failed: Sequence[BulkReject],
    *,
    channel: str | None,
    now: datetime,
) -> AddManyResult:
    """What was just written is known without reading it back; replays are read."""
    committed = tuple(
        _record_of(p, channel=channel, now=now) for p in pending if isinstance(p.outcome, _Committed)
    )
    duplicates = _replayed_records(user_id, [p.outcome for p in pending if isinstance(p.outcome, _Replayed)])
    return AddManyResult(
        committed=committed,
        duplicates=duplicates,
        failed=tuple(failed),
        is_partial=bool(failed) and bool(committed or duplicates),
    )


def _replayed_records(user_id: str, replays: Sequence[_Replayed]) -> tuple[DepositRecord, ...]:
    """The deposits the replays answer with, read back in their order (an erased one is left out)."""
    replayed = [replay.deposit_id for replay in replays]
    records = {
        r.id: r for r in deposit_records(list(Deposit.objects.filter(user_id=user_id, id__in=replayed)))
    }
    return tuple(records[str(i)] for i in replayed if str(i) in records)


def _refused_in_writing(bulk: BulkDraft, pending: Mapping[int, _Pending]) -> list[BulkReject]:
    """The items (by index in the request) the write refused, each with what was sent."""
    return [
        BulkReject(index=index, item=bulk.items[index].sent, error=p.outcome.error)
        for index, p in pending.items()
        if isinstance(p.outcome, _Failed)
    ]


def deposit_add_many(*, bulk: BulkDraft, channel: str | None) -> AddManyResult:
    """Add up to 1000 validated items, each with its own key; skip-and-report, or all-or-nothing.

    The gate runs first, in Python; the accepted items are then written in one batch. Should
    the batch hit a database error, the items are retried one by one, each in its own
    savepoint, so one bad item cannot take the others down.
    """
    user_id, mode = bulk.user_id, bulk.on_gate_reject
    judged = [_judged(item) for item in bulk.items]
    failed = [j for j in judged if isinstance(j, BulkReject)]
    pending = {index: j for index, j in enumerate(judged) if isinstance(j, _Pending)}
    if failed and mode == "abort":
        return AddManyResult(failed=tuple(failed))
    now = timezone.now()
    with transaction.atomic():
        _write_bulk(user_id, list(pending.values()), channel=channel, now=now)
        failed += _refused_in_writing(bulk, pending)
        failed.sort(key=lambda reject: reject.index)
        if failed and mode == "abort":
            transaction.set_rollback(True)
            return AddManyResult(failed=tuple(failed))
    return _bulk_result(user_id, list(pending.values()), failed, channel=channel, now=now)


def deposit_retract(
    *, user_id: str, deposit_id: str, mode: str = "soft", reason: str | None = None
) -> RetractResult:
    """Soft: mark retracted and keep every edge. Hard: erase the row, its index entry and edges."""
    validate_user_id(user_id)
    mode = validate_enum("mode", mode, default="soft")
    target = as_uuid(deposit_id)
    with transaction.atomic():
        row = (
            Deposit.objects.select_for_update().filter(user_id=user_id, id=target).first() if target else None
        )
        if row is None:
            raise not_found(f"no deposit {deposit_id!r} for user {user_id!r}")
        if mode == "soft":
            return _soft_retract(row, reason)
        # Hard erasure: the deposits this one superseded may become live again.
        affected = {
            row.bag_id,
            *Deposit.objects.filter(edges_in__new_deposit=row).values_list("bag_id", flat=True),
        }
        erased = row.pk
        # The resolutions that copied its artifact refs, asked before its record there goes with it.
        copied_into = list(
            ResolutionKept.objects.filter(user_id=user_id, deposit=row).values_list(
                "resolution_id", flat=True
            )
        )
        # Its idempotency keys stay behind as tombstones (IdempotencyEntry's on_delete).
        row.delete()
        search_backend().forget_erased()
        # Deposit rows before bag rows, as every write locks them.
        _forget_copied_refs(user_id, copied_into)
        now = timezone.now()
        live = bags_recount(affected, user_id=user_id, now=now)
        closers = dict.fromkeys(affected, (ConflictEpisode.ERASURE, erased))
        opened = episodes_sync(user_id=user_id, bag_ids=affected, now=now, closers=closers, taken_back=erased)
        bags_forget_emptied([row.bag_id], user_id=user_id)
        observations_erase(user_id=user_id, deposit_id=str(erased))
        tally_write(Tally(user_id, live=live, conflicts=opened, activity=now))
    return RetractResult(deposit_id=deposit_id, mode="hard")


def _forget_copied_refs(user_id: str, resolution_ids: Sequence[uuid.UUID]) -> None:
    """Take from each resolution deposit the artifact refs that only an erased kept deposit gave it.

    The resolution's row is locked before its kept deposits are read: two erasures of its kept
    deposits at once each see what the other left."""
    rows = Deposit.objects.filter(user_id=user_id, pk__in=resolution_ids).select_for_update().order_by("pk")
    for resolution in rows:
        still_kept = ResolutionKept.objects.filter(resolution_id=resolution.pk).values("deposit_id")
        given = {
            ref
            for refs in Deposit.objects.filter(user_id=user_id, pk__in=still_kept).values_list(
                "artifact_refs", flat=True
            )
            for ref in refs
        }
        refs = [ref for ref in resolution.artifact_refs if ref in given]
        if refs != resolution.artifact_refs:
            Deposit.objects.filter(pk=resolution.pk).update(artifact_refs=refs)


def _soft_retract(row: Deposit, reason: str | None) -> RetractResult:
    """Retract `row`; if it is a correction, what it superseded may be live again.

    What it superseded is live again (domain.md, Live) unless another superseding edge still points
    at it; bags, terms and episodes follow.
    """
    if row.retracted_at is None:
        now = timezone.now()
        Deposit.objects.filter(pk=row.pk).update(retracted_at=now, retracted_reason=reason or "")
        corrected = Contradiction.objects.superseding().filter(new_deposit=row)
        revived_bags = set(corrected.values_list("old_deposit__bag_id", flat=True))
        corrected.update(superseding=False)
        bags = sorted({row.bag_id, *revived_bags})
        live = bags_recount(bags, user_id=row.user_id, now=now)
        closer = (ConflictEpisode.RETRACTION, row.pk)
        opened = episodes_sync(
            user_id=row.user_id, bag_ids=bags, now=now, closers={row.bag_id: closer}, taken_back=row.pk
        )
        observations_withdraw(user_id=row.user_id, deposit_id=str(row.pk))
        tally_write(Tally(row.user_id, live=live, conflicts=opened, activity=now))
    preserved = tuple(
        str(i)
        for i in Contradiction.objects.filter(old_deposit=row)
        .order_by("created_at")
        .values_list("new_deposit_id", flat=True)
    )
    return RetractResult(deposit_id=str(row.pk), mode="soft", contradicts_preserved=preserved)


def recall_record(*, user_id: str, results: SearchResults, now: datetime | None = None) -> None:
    """Count an agent's recall toward the owner's Coverage pillar (the dashboard's playground does not)."""
    RecallLog.objects.create(
        user_id=user_id,
        created_at=now or timezone.now(),
        hit_count=len(results),
        returned_confident=any(hit.is_confident for hit in results),
    )


EXPIRE_BATCH = 5000


def idempotency_expire(*, now: datetime | None = None, progress: Progress | None = None) -> dict[str, int]:
    """Delete idempotency entries (deposits' and observations') past their 24-hour window; counts `deleted`.

    Only housekeeping: every read already ignores expired entries, so running late,
    twice, or twice at once is harmless.
    """
    progress = progress or no_progress
    now = now or timezone.now()
    expired = IdempotencyEntry.objects.filter(created_at__lte=now - WINDOW)
    total = expired.count()
    progress(0, total)
    deleted = 0
    while batch := list(expired.values_list("pk", flat=True)[:EXPIRE_BATCH]):
        # Filtered again: an entry replaced by a new use since the batch was read stays.
        gone, _ = expired.filter(pk__in=batch).delete()
        deleted += gone
        progress(min(deleted, total), total)
    # The belief observations' keys keep the same window.
    deleted += observation_keys_expire(now=now)
    return {"deleted": deleted}


__all__ = [
    "AddManyResult",
    "AddResult",
    "RetractResult",
    "deposit_add",
    "deposit_add_many",
    "deposit_contradict",
    "deposit_retract",
    "idempotency_expire",
    "recall_record",
]

"""Writes to the store: add, add_many, contradict, retract.

Each write runs the gate, inserts, and keeps bag counts, edges and idempotency entries
right in one transaction, so a failure leaves nothing behind.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from beliefs.errors import ApiError
from deposits.bagcounts import bag_add_deposits, bags_recount
from deposits.domain import gate
from deposits.domain.bags import bag_id as compute_bag_id
from deposits.domain.idempotency import MAX_KEY_LENGTH, WINDOW, payload_fingerprint
from deposits.domain.types import Deposit as DepositRecord
from deposits.domain.validation import (
    DepositDraft,
    DepositValidationError,
    validate_deposit,
    validate_enum,
    validate_reason,
    validate_scope,
    validate_user_id,
)
from deposits.models import Contradiction, Deposit, IdempotencyEntry
from deposits.selectors import as_api_error, deposit_record, deposit_records

MAX_BULK_ITEMS = 1000


@dataclass(frozen=True, slots=True)
class AddResult:
    deposit: DepositRecord
    is_idempotent_replay: bool

    @property
    def id(self) -> str:
        return self.deposit.id

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "add_result",
            "deposit": self.deposit.to_dict(),
            "is_idempotent_replay": self.is_idempotent_replay,
        }


@dataclass(frozen=True, slots=True)
class BulkReject:
    index: int
    item: Mapping[str, Any]
    error: ApiError

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "item": dict(self.item), "error": self.error.to_dict()["error"]}


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "add_many_result",
            "committed": [d.to_dict() for d in self.committed],
            "duplicates": [d.to_dict() for d in self.duplicates],
            "failed": [f.to_dict() for f in self.failed],
            "is_partial": self.is_partial,
            "total": self.total,
            "all_succeeded": self.all_succeeded,
        }


@dataclass(frozen=True, slots=True)
class RetractResult:
    deposit_id: str
    mode: str
    contradicts_preserved: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "retract_result",
            "deposit_id": self.deposit_id,
            "mode": self.mode,
            "contradicts_preserved": list(self.contradicts_preserved),
        }


def _validate_key(key: Any) -> str | None:
    if key is None:
        return None
    if not isinstance(key, str) or not 1 <= len(key) <= MAX_KEY_LENGTH:
        raise ApiError(
            "validation_error",
            f"idempotency_key must be 1..{MAX_KEY_LENGTH} characters; compute one with "
            "idempotency_key(*parts) (see the README)",
            field="idempotency_key",
        )
    return key


def _fingerprint(draft: DepositDraft, reason: str) -> str:
    return payload_fingerprint(
        {
            "content": draft.content,
            "polarity": draft.polarity,
            "evidence_grade": draft.evidence_grade,
            "scope": draft.scope.to_dict(),
            "tags": list(draft.tags),
            "artifact_refs": list(draft.artifact_refs),
            "contradicts": list(draft.contradicts),
            "author": draft.author,
            "author_role": draft.author_role,
            "task_id": draft.task_id,
            "repro_status": draft.repro_status,
            "reason": reason,
        }
    )


def _claim_key(*, user_id: str, key: str, fingerprint: str, now: datetime) -> str | None:
    """Claim `key` for this write; return the id to replay if an equal write already owns it.

    Exactly one of any number of concurrent claims wins, by the unique (user_id, key)
    constraint: a loser's INSERT waits for the winner's transaction, then finds its row.
    An entry older than the window is claimed over, so correctness never waits for cleanup.
    """
    adapt = connection.ops.adapt_datetimefield_value
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO deposits_idempotencyentry (user_id, key, payload_hash, created_at) "
            "VALUES (%s, %s, %s, %s) ON CONFLICT (user_id, key) DO NOTHING",
            [user_id, key, fingerprint, adapt(now)],
        )
        if cursor.rowcount == 1:
            return None
        cursor.execute(
            "UPDATE deposits_idempotencyentry SET payload_hash = %s, created_at = %s, deposit_id = NULL "
            "WHERE user_id = %s AND key = %s AND created_at <= %s",
            [fingerprint, adapt(now), user_id, key, adapt(now - WINDOW)],
        )
        if cursor.rowcount == 1:
            return None
    entry = IdempotencyEntry.objects.get(user_id=user_id, key=key)
    if entry.payload_hash != fingerprint or entry.deposit_id is None:
        raise ApiError(
            "idempotency_conflict",
            "this idempotency_key was already used within 24 hours for a different payload; "
            "use a new key for a new write, or resend the original payload to replay it",
            idempotency_key=key,
            existing_id=str(entry.deposit_id) if entry.deposit_id else None,
        )
    return str(entry.deposit_id)


def _existing_targets(user_id: str, ids: Sequence[str], *, lock: bool = False) -> dict[str, Deposit]:
    valid = []
    for raw in ids:
        try:
            valid.append(uuid.UUID(raw))
        except ValueError:
            continue
    found = Deposit.objects.filter(user_id=user_id, id__in=valid).only("id", "bag_id", "scope_model", "scope_dataset", "scope_env", "scope_version", "scope_n", "scope_seed", "scope_note")
    if lock:
        # Lock the targets before any bag row, in id order, as a retraction locks its deposit first:
        # a concurrent retraction or erasure then runs wholly before or after (an erased id is
        # missing), instead of deadlocking with this write's bag rows or breaking its edge insert.
        found = found.select_for_update(no_key=True).order_by("pk")
    by_id = {str(d.id): d for d in found}
    missing = [raw for raw in ids if raw not in by_id and str(_as_uuid(raw)) not in by_id]
    if missing:
        raise ApiError(
            "missing_contradicts",
            "contradicts lists ids that are not deposits of this user; check the ids "
            "(an erased deposit cannot be contradicted)",
            missing=missing,
        )
    return {raw: by_id[str(_as_uuid(raw))] for raw in ids}


def _as_uuid(raw: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(raw)
    except ValueError:
        return None


def _insert(draft: DepositDraft, *, channel: str | None, reason: str, now: datetime, targets: Mapping[str, Deposit]) -> Deposit:
    bag = compute_bag_id(draft.user_id, draft.scope)
    scope = draft.scope
    # The bag row first: the deposit's foreign key points at it.
    bag_add_deposits(bag_id=bag, user_id=draft.user_id, scope=scope, polarities=[(draft.polarity, now)])
    row = Deposit.objects.create(
        user_id=draft.user_id,
        bag_id=bag,
        content=draft.content,
        polarity=draft.polarity,
        evidence_grade=draft.evidence_grade,
        scope_model=scope.model,
        scope_dataset=scope.dataset,
        scope_env=scope.env,
        scope_version=scope.version,
        scope_n=scope.n,
        scope_seed=scope.seed,
        scope_note=scope.note,
        tags=list(draft.tags),
        artifact_refs=list(draft.artifact_refs),
        author=draft.author,
        author_role=draft.author_role,
        task_id=draft.task_id,
        channel=channel,
        repro_status=draft.repro_status,
        created_at=now,
    )
    if targets:
        Contradiction.objects.bulk_create(
            Contradiction(user_id=draft.user_id, new_deposit=row, old_deposit=target, reason=reason, created_at=now)
            for target in {t.pk: t for t in targets.values()}.values()
        )
        bags_recount(t.bag_id for t in targets.values())
    return row


def _write(draft: DepositDraft, *, channel: str | None, key: str | None, reason: str) -> AddResult:
    """The one write path: gate, key claim, insert, edges and counts, in one transaction."""
    decision = gate.judge(draft)
    if not decision.accepted:
        raise ApiError("gate_rejected", f"the gate refused this claim: {decision.reason}", gate_reason=decision.reason)
    now = timezone.now()
    with transaction.atomic():
        if key is not None:
            replay_id = _claim_key(user_id=draft.user_id, key=key, fingerprint=_fingerprint(draft, reason), now=now)
            if replay_id is not None:
                return AddResult(deposit=deposit_record(draft.user_id, replay_id), is_idempotent_replay=True)
        targets = _existing_targets(draft.user_id, draft.contradicts, lock=True)
        row = _insert(draft, channel=channel, reason=reason, now=now, targets=targets)
        if key is not None:
            IdempotencyEntry.objects.filter(user_id=draft.user_id, key=key).update(deposit=row)
    return AddResult(deposit=deposit_record(draft.user_id, str(row.pk)), is_idempotent_replay=False)


def deposit_add(*, user_id: str, data: Mapping[str, Any], channel: str | None, idempotency_key: str | None = None) -> AddResult:
    """Add one deposit (through the gate); with a key, a retry within 24 h is a replay."""
    try:
        draft = validate_deposit(user_id, data)
    except DepositValidationError as error:
        raise as_api_error(error) from error
    return _write(draft, channel=channel, key=_validate_key(idempotency_key), reason="")


def deposit_contradict(*, user_id: str, data: Mapping[str, Any], channel: str | None, idempotency_key: str | None = None) -> AddResult:
    """Write a correction that supersedes the listed deposits; scope defaults to the first one's."""
    try:
        validate_user_id(user_id)
        reason = validate_reason(data.get("reason"))
        contradicts = data.get("contradicts")
        if not isinstance(contradicts, list) or not contradicts:
            raise DepositValidationError(
                "contradicts", "contradicts must list at least one id of the deposit(s) this corrects"
            )
        draft = validate_deposit(user_id, data)
    except DepositValidationError as error:
        raise as_api_error(error) from error
    targets = _existing_targets(user_id, draft.contradicts)
    if data.get("scope") is None:
        first = targets[draft.contradicts[0]]
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
        draft = replace(draft, scope=inherited)
    return _write(draft, channel=channel, key=_validate_key(idempotency_key), reason=reason)


def deposit_add_many(*, user_id: str, items: Sequence[Mapping[str, Any]], on_gate_reject: str = "skip", channel: str | None) -> AddManyResult:
    """Add up to 1000 items, each with its own key; skip-and-report, or all-or-nothing."""
    try:
        validate_user_id(user_id)
        mode = validate_enum("on_gate_reject", on_gate_reject, default="skip")
    except DepositValidationError as error:
        raise as_api_error(error) from error
    if len(items) > MAX_BULK_ITEMS:
        raise ApiError(
            "validation_error",
            f"items holds {len(items)} entries; at most {MAX_BULK_ITEMS} per call. Send several batches: "
            "the idempotency keys make retrying any of them safe.",
            field="items",
        )
    committed: list[DepositRecord] = []
    duplicates: list[DepositRecord] = []
    failed: list[BulkReject] = []
    with transaction.atomic():
        for index, item in enumerate(items):
            try:
                key = item.get("idempotency_key")
                if key is None:
                    raise ApiError(
                        "validation_error",
                        "each bulk item needs an idempotency_key, so retrying a partly failed batch is safe",
                        field="idempotency_key",
                    )
                with transaction.atomic():
                    result = deposit_add(user_id=user_id, data=item, channel=channel, idempotency_key=key)
            except ApiError as error:
                failed.append(BulkReject(index=index, item=item, error=error))
                continue
            except IntegrityError as error:
                failed.append(BulkReject(index=index, item=item, error=ApiError("validation_error", str(error))))
                continue
            (duplicates if result.is_idempotent_replay else committed).append(result.deposit)
        if failed and mode == "abort":
            transaction.set_rollback(True)
            return AddManyResult(duplicates=tuple(duplicates), failed=tuple(failed), is_partial=False)
    return AddManyResult(
        committed=tuple(committed),
        duplicates=tuple(duplicates),
        failed=tuple(failed),
        is_partial=bool(failed) and bool(committed or duplicates),
    )


def deposit_retract(*, user_id: str, deposit_id: str, mode: str = "soft", reason: str | None = None) -> RetractResult:
    """Soft: mark retracted and keep every edge. Hard: erase the row, its index entry and edges."""
    try:
        validate_user_id(user_id)
        mode = validate_enum("mode", mode, default="soft")
    except DepositValidationError as error:
        raise as_api_error(error) from error
    target = _as_uuid(deposit_id)
    with transaction.atomic():
        row = Deposit.objects.select_for_update().filter(user_id=user_id, id=target).first() if target else None
        if row is None:
            raise ApiError("not_found", f"no deposit {deposit_id!r} for user {user_id!r}")
        if mode == "soft":
            if row.retracted_at is None:
                Deposit.objects.filter(pk=row.pk).update(retracted_at=timezone.now(), retracted_reason=reason or "")
                bags_recount([row.bag_id])
            preserved = tuple(
                str(i) for i in Contradiction.objects.filter(old_deposit=row).order_by("created_at").values_list("new_deposit_id", flat=True)
            )
            return RetractResult(deposit_id=str(row.pk), mode="soft", contradicts_preserved=preserved)
        # Hard erasure: the deposits this one superseded may become live again.
        affected = {row.bag_id, *Deposit.objects.filter(edges_in__new_deposit=row).values_list("bag_id", flat=True)}
        row.delete()
        bags_recount(affected)
    return RetractResult(deposit_id=deposit_id, mode="hard")


__all__ = [
    "idempotency_expire",
    "AddManyResult",
    "AddResult",
    "RetractResult",
    "deposit_add",
    "deposit_add_many",
    "deposit_contradict",
    "deposit_records",
    "deposit_retract",
]


def idempotency_expire(*, now: datetime | None = None) -> int:
    """Delete idempotency entries past their 24-hour window; returns how many went.

    Only housekeeping: every read already ignores expired entries, so running late,
    twice, or twice at once is harmless.
    """
    cutoff = (now or timezone.now()) - WINDOW
    deleted, _ = IdempotencyEntry.objects.filter(created_at__lte=cutoff).delete()
    return deleted

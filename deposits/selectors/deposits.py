"""Reads of the store, each in a fixed number of queries."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import ObjectDoesNotExist
from django.db.models import Q

from atlaso_site.access.models import Channel
from atlaso_site.lib.errors import not_found
from atlaso_site.lib.paging import Page, page_of
from deposits.domain.types import BeliefRef, Scope
from deposits.domain.types import Deposit as DepositRecord
from deposits.domain.validation import validate_user_id
from deposits.models import Contradiction, Deposit, ScopeBag


def as_uuid(raw: str) -> uuid.UUID | None:
    """The UUID `raw` spells, or None: an id of any other shape names no deposit."""
    try:
        return uuid.UUID(raw)
    except ValueError:
        return None


def _edges(ids: Sequence[uuid.UUID]) -> tuple[dict[uuid.UUID, list[str]], dict[uuid.UUID, list[str]]]:
    """(what each deposit contradicts, what supersedes each now), oldest edge first."""
    outgoing: dict[uuid.UUID, list[str]] = defaultdict(list)
    incoming: dict[uuid.UUID, list[str]] = defaultdict(list)
    if not ids:
        return outgoing, incoming
    edges = (
        Contradiction.objects.filter(Q(new_deposit_id__in=ids) | Q(old_deposit_id__in=ids))
        .order_by("created_at", "id")
        .values_list("new_deposit_id", "old_deposit_id", "superseding")
    )
    for new, old, superseding in edges:
        outgoing[new].append(str(old))
        if superseding:  # a retracted correction's edge stays for audit, superseding nothing
            incoming[old].append(str(new))
    return outgoing, incoming


def record_from_row(
    row: Deposit,
    *,
    contradicts: Iterable[str] = (),
    superseded_by: Iterable[str] = (),
    with_state: bool = False,
) -> DepositRecord:
    return DepositRecord(
        id=str(row.pk),
        content=row.content,
        polarity=row.polarity,
        evidence_grade=row.evidence_grade,
        scope=Scope(
            model=row.scope_model,
            dataset=row.scope_dataset,
            env=row.scope_env,
            version=row.scope_version,
            n=row.scope_n,
            seed=row.scope_seed,
            note=row.scope_note,
        ),
        user_id=row.user_id,
        created_at=row.created_at,
        tags=tuple(row.tags),
        contradicts=tuple(contradicts),
        artifact_refs=tuple(row.artifact_refs),
        author=row.author,
        author_role=row.author_role,
        repro_status=row.repro_status,
        task_id=row.task_id,
        channel=row.channel,
        belief=BeliefRef(row.belief_key, row.belief_value) if row.belief_key and row.belief_value else None,
        superseded_by=tuple(superseded_by),
        retracted_at=row.retracted_at if with_state else None,
        retracted_reason=row.retracted_reason if with_state else None,
    )


def deposit_records(rows: Sequence[Deposit], *, with_state: bool = False) -> list[DepositRecord]:
    """Domain records for rows, edges included, in two queries whatever the count.

    `with_state` adds what only an audit view needs: superseded_by and the retraction.
    """
    outgoing, incoming = _edges([row.pk for row in rows])
    return [
        record_from_row(
            row,
            contradicts=outgoing.get(row.pk, []),
            superseded_by=incoming.get(row.pk, []) if with_state else (),
            with_state=with_state,
        )
        for row in rows
    ]


def _row(user_id: str, deposit_id: str) -> Deposit:
    key = as_uuid(deposit_id)
    row = Deposit.objects.filter(user_id=user_id, id=key).first() if key else None
    if row is None:
        raise not_found(f"no deposit {deposit_id!r} for user {user_id!r}")
    return row


def deposit_record(user_id: str, deposit_id: str) -> DepositRecord:
    return deposit_records([_row(user_id, deposit_id)])[0]


def deposit_detail(user_id: str, deposit_id: str) -> DepositRecord:
    """One deposit with its audit state; retracted deposits stay readable."""
    return deposit_records([_row(user_id, deposit_id)], with_state=True)[0]


def deposit_page(
    *, user_id: str, limit: int = 50, offset: int = 0, include_retracted: bool = False
) -> Page[DepositRecord]:
    """The owner's deposits, newest first; a user_id no deposit could have is a 422, not an empty page."""
    validate_user_id(user_id)
    rows = Deposit.objects.filter(user_id=user_id)
    if not include_retracted:
        rows = rows.not_retracted()
    return page_of(
        rows.order_by("-created_at", "-id"),
        limit=limit,
        offset=offset,
        convert=lambda page: deposit_records(page, with_state=True),
    )


def owner_exists(user_id: str) -> bool:
    """Whether anything was ever deposited for `user_id` (bags outlive erased deposits)."""
    return ScopeBag.objects.filter(user_id=user_id).exists()


def channel_tiers(names: Iterable[str | None]) -> dict[str, str]:
    """The tier each named channel is bound to, in one query; an unknown channel is left out."""
    wanted = {name for name in names if name}
    if not wanted:
        return {}
    return dict(Channel.objects.filter(name__in=wanted).values_list("name", "tier__name"))


@dataclass(frozen=True, slots=True)
class EdgeEnd:
    """One end of a contradicts edge, enough to name and link it."""

    id: str
    content: str
    polarity: str
    evidence_grade: str
    retracted: bool


@dataclass(frozen=True, slots=True)
class Edge:
    """A contradicts edge with its reason: `new` supersedes `old`, unless `new` was taken back."""

    new: EdgeEnd
    old: EdgeEnd
    reason: str
    created_at: datetime
    # False once `new` is soft-retracted: kept for audit, it supersedes nothing any more.
    superseding: bool = True
    # Who undid the resolution that `new` is, when it was undone.
    undone_by: str | None = None

    @property
    def taken_back(self) -> str:
        """How the pages mark an edge that no longer supersedes: "undone", "retracted", or "" while it holds.

        "undone" when its resolution was undone, "retracted" when its source was retracted.
        """
        if self.superseding:
            return ""
        return "undone" if self.undone_by else "retracted"


def _end(row: Deposit) -> EdgeEnd:
    return EdgeEnd(
        id=str(row.pk),
        content=row.content,
        polarity=row.polarity,
        evidence_grade=row.evidence_grade,
        retracted=row.retracted_at is not None,
    )


def edges_touching(*, user_id: str, deposit_ids: Iterable[str]) -> list[Edge]:
    """Every contradicts edge into or out of these deposits, with its reason and both ends, oldest first.

    One query whatever the count: what the bag and deposit pages show beside the ids.
    """
    ids = [key for raw in deposit_ids if (key := as_uuid(raw)) is not None]
    if not ids:
        return []
    rows = (
        Contradiction.objects.filter(user_id=user_id)
        .filter(Q(new_deposit_id__in=ids) | Q(old_deposit_id__in=ids))
        .select_related("new_deposit__resolution", "old_deposit")
        .order_by("created_at", "id")
    )
    return [
        Edge(
            new=_end(row.new_deposit),
            old=_end(row.old_deposit),
            reason=row.reason,
            created_at=row.created_at,
            superseding=row.superseding,
            undone_by=_undone_by(row.new_deposit),
        )
        for row in rows
    ]


def _undone_by(deposit: Deposit) -> str | None:
    try:
        return deposit.resolution.undone_by
    except ObjectDoesNotExist:  # not a resolution
        return None

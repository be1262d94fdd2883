"""Reads of beliefs, revisions and tiers."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db.models import QuerySet
from django.utils import timezone

from atlaso_site.lib.errors import not_found
from atlaso_site.lib.paging import Page
from beliefs.domain import rule
from beliefs.domain.rule import BeliefState, Verdict
from beliefs.models import Belief, BeliefRevision, ProvenanceTier
from beliefs.services import replay_observations, rule_settings


def _verdict(row: Belief, now: datetime) -> Verdict:
    state = BeliefState() if row.state.get("empty") else BeliefState.from_json(row.state)
    return rule.verdict(state, rule_settings(), belief_key=row.key, now=now)


def belief_verdict(*, user_id: str, key: str, now: datetime | None = None) -> Verdict:
    row = Belief.objects.filter(user_id=user_id, key=key).first()
    if row is None:
        raise not_found(f"no belief {key!r} for user {user_id!r}")
    return _verdict(row, now or timezone.now())


def verdicts_for(*, user_id: str, keys: Iterable[str], now: datetime | None = None) -> dict[str, Verdict]:
    """Verdicts of several keys in one query (recall uses it for its hits)."""
    now = now or timezone.now()
    return {row.key: _verdict(row, now) for row in Belief.objects.filter(user_id=user_id, key__in=set(keys))}


def belief_page(
    *, user_id: str, uncertain: bool | None = None, limit: int = 50, offset: int = 0
) -> Page[Verdict]:
    """An owner's beliefs by key; `uncertain` keeps those the memory should ask about (or not)."""
    rows = Belief.objects.filter(user_id=user_id)
    if uncertain is not None:
        rows = rows.filter(is_uncertain=uncertain)
    total = rows.count()
    now = timezone.now()
    items = [_verdict(row, now) for row in rows.order_by("key")[offset : offset + limit]]
    return Page(items=items, total=total, limit=limit, offset=offset)


def revision_page(*, user_id: str, key: str, limit: int = 50, offset: int = 0) -> Page[BeliefRevision]:
    """A belief's log in claim-time order (ties by arrival), the order it is folded in.

    Each revision carries `verdict`: the belief's verdict right after it.
    """
    rows = BeliefRevision.objects.filter(user_id=user_id, belief_key=key)
    total = rows.count()
    if total == 0:
        raise not_found(f"no belief {key!r} for user {user_id!r}")
    page = list(rows.order_by("observed_at", "id")[offset : offset + limit])
    after = _verdicts_after(user_id, key, page, timezone.now())
    for revision in page:
        revision.verdict = after[revision.id]
    return Page(items=page, total=total, limit=limit, offset=offset)


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


def tier_list() -> QuerySet[ProvenanceTier]:
    """Every tier, most trusted first, with its channels prefetched."""
    return ProvenanceTier.objects.prefetch_related("channels").order_by("-ceiling", "name")

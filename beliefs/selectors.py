"""Reads of beliefs, revisions, tiers, and what the provenance page shows."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db import connection
from django.db.models import Count, OuterRef, Prefetch, Q, QuerySet, Subquery
from django.utils import timezone

from atlaso_site.access.models import ApiKey, Channel, ProvenanceTier
from atlaso_site.job_runs.models import JobRun
from atlaso_site.lib.errors import not_found
from atlaso_site.lib.paging import Page, page_of
from beliefs.domain import rule
from beliefs.domain.rule import BeliefState, Verdict
from beliefs.domain.tiers import can_move_beliefs
from beliefs.models import Belief, BeliefRevision, ProvenanceChange
from beliefs.services import rule_settings, verdicts_after


def _verdict(row: Belief, now: datetime) -> Verdict:
    return verdict_of(key=row.key, state=row.state, now=now)


def verdict_of(*, key: str, state: dict, now: datetime) -> Verdict:
    """The verdict of a belief from its stored state (`Belief.state`), as of `now`."""
    folded = BeliefState() if state.get("empty") else BeliefState.from_json(state)
    return rule.verdict(folded, rule_settings(), belief_key=key, now=now)


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
    now = timezone.now()
    return page_of(
        rows.order_by("key"),
        limit=limit,
        offset=offset,
        convert=lambda page: [_verdict(row, now) for row in page],
    )


def revision_page(*, user_id: str, key: str, limit: int = 50, offset: int = 0) -> Page[BeliefRevision]:
    """A belief's log in claim-time order (ties by arrival), the order it is folded in.

    Each revision carries `verdict`: the belief's verdict right after it.
    """
    rows = BeliefRevision.objects.filter(user_id=user_id, belief_key=key).order_by("observed_at", "id")
    page = page_of(rows, limit=limit, offset=offset)
    if page.total == 0:
        raise not_found(f"no belief {key!r} for user {user_id!r}")
    after = verdicts_after(user_id, key, list(page.items), timezone.now())
    for revision in page.items:
        revision.verdict = after[revision.id]
    return page


@dataclass(frozen=True, slots=True)
class SetAside:
    """Observations of a belief that did not count, by the channel they came on."""

    channel: str
    tier: str
    ceiling: float
    count: int


def set_aside(*, user_id: str, key: str) -> list[SetAside]:
    """The belief's observations that changed nothing, grouped, the most numerous group first.

    Those whose reliability was at or below the pivot, per channel and tier as they were when each
    arrived.
    """
    rows = (
        BeliefRevision.objects.filter(user_id=user_id, belief_key=key, effective=False)
        .values("channel", "tier", "ceiling")
        .annotate(count=Count("id"))
        .order_by("-count", "channel")
    )
    return [SetAside(row["channel"], row["tier"], row["ceiling"], row["count"]) for row in rows]


def tier_list(*, only_channel: str | None = None) -> QuerySet[ProvenanceTier]:
    """Every tier, most trusted first, with its channels prefetched (only `only_channel` when given)."""
    channels = Channel.objects.all() if only_channel is None else Channel.objects.filter(name=only_channel)
    return ProvenanceTier.objects.prefetch_related(Prefetch("channels", queryset=channels)).order_by(
        "-ceiling", "name"
    )


# --- Provenance: what the operators' page shows ------------------------------------------------

# Per tier, the beliefs a new ceiling rebuilds: every key touched by a channel bound to the tier
# or by a channel that relayed content under it as taint. The same rule as tier_update's channel
# set, spelled once in SQL for every tier at once; a test holds the two together.
_TIER_REBUILD_COUNTS = """
SELECT touched.tier, COUNT(*) FROM (
    SELECT DISTINCT tier_channel.tier, revision.user_id, revision.belief_key
    FROM (
        SELECT tier.name AS tier, channel.name AS channel
        FROM beliefs_channel channel JOIN beliefs_provenancetier tier ON tier.id = channel.tier_id
        UNION
        SELECT taint_tier AS tier, channel FROM beliefs_beliefrevision WHERE taint_tier IS NOT NULL
    ) tier_channel
    JOIN beliefs_beliefrevision revision ON revision.channel = tier_channel.channel
) touched
GROUP BY touched.tier
"""

# Per channel, the beliefs it touched: what a rebind to another tier rebuilds.
_CHANNEL_BELIEF_COUNTS = """
SELECT touched.channel, COUNT(*) FROM (
    SELECT DISTINCT channel, user_id, belief_key FROM beliefs_beliefrevision
) touched
GROUP BY touched.channel
"""


def _counts(sql: str) -> dict[str, int]:
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return {name: count for name, count in cursor.fetchall()}


def tier_rebuild_counts() -> dict[str, int]:
    """How many beliefs a new ceiling on each tier would rebuild, by tier name (one query)."""
    return _counts(_TIER_REBUILD_COUNTS)


def channel_belief_counts() -> dict[str, int]:
    """How many beliefs each channel touched (what rebinding it rebuilds), by name (one query)."""
    return _counts(_CHANNEL_BELIEF_COUNTS)


@dataclass(frozen=True, slots=True)
class TierRow:
    tier: ProvenanceTier
    channels: list[Channel]
    # The beliefs a new ceiling would rebuild.
    rebuild_count: int
    # False when the ceiling is at or below the pivot: nothing said on its channels counts.
    moves_beliefs: bool
    # The rebuild the latest change to the tier started, if any.
    rebuild: JobRun | None


@dataclass(frozen=True, slots=True)
class ChannelRow:
    channel: Channel
    key_count: int
    live_key_count: int
    # The beliefs the channel touched: what a rebind rebuilds.
    belief_count: int
    rebuild: JobRun | None

    @property
    def revoked_key_count(self) -> int:
        return self.key_count - self.live_key_count


@dataclass(frozen=True, slots=True)
class ProvenanceOverview:
    tiers: list[TierRow]
    channels: list[ChannelRow]
    keys: Page[ApiKey]
    # Newest first; each change carries `rebuild`, the run it started (or None).
    changes: Page[ProvenanceChange]


def _latest_rebuild(action: str) -> Subquery:
    changes = ProvenanceChange.objects.filter(
        action=action, subject=OuterRef("name"), rebuild_run_id__isnull=False
    )
    return Subquery(changes.order_by("-at", "-id").values("rebuild_run_id")[:1])


def provenance_overview(
    *, keys_limit: int = 50, keys_offset: int = 0, changes_limit: int = 20, changes_offset: int = 0
) -> ProvenanceOverview:
    """Tiers, channels, a page of API keys and a page of the change history, in at most nine queries."""
    tiers = list(
        ProvenanceTier.objects.annotate(last_rebuild_id=_latest_rebuild(ProvenanceChange.Action.TIER_CHANGE))
        .order_by("-ceiling", "name")
    )  # fmt: skip
    channels = list(
        Channel.objects.select_related("tier")
        .annotate(
            key_count=Count("api_keys"),
            live_key_count=Count("api_keys", filter=Q(api_keys__revoked_at__isnull=True)),
            last_rebuild_id=_latest_rebuild(ProvenanceChange.Action.CHANNEL_CHANGE),
        )
        .order_by("name")
    )
    key_page = page_of(
        ApiKey.objects.select_related("channel__tier").order_by("-created_at", "-id"),
        limit=keys_limit,
        offset=keys_offset,
    )
    change_page = page_of(
        ProvenanceChange.objects.order_by("-at", "-id"), limit=changes_limit, offset=changes_offset
    )
    run_ids = {
        *(row.last_rebuild_id for row in [*tiers, *channels]),
        *(change.rebuild_run_id for change in change_page.items),
    } - {None}
    runs = JobRun.objects.in_bulk(run_ids) if run_ids else {}
    for change in change_page.items:
        change.rebuild = runs.get(change.rebuild_run_id)
    by_tier: dict[int, list[Channel]] = {}
    for channel in channels:
        by_tier.setdefault(channel.tier_id, []).append(channel)
    tier_counts, channel_counts = tier_rebuild_counts(), channel_belief_counts()
    knobs = rule_settings()
    return ProvenanceOverview(
        tiers=[
            TierRow(
                tier=tier,
                channels=by_tier.get(tier.pk, []),
                rebuild_count=tier_counts.get(tier.name, 0),
                moves_beliefs=can_move_beliefs(tier.ceiling, knobs),
                rebuild=runs.get(tier.last_rebuild_id),
            )
            for tier in tiers
        ],
        channels=[
            ChannelRow(
                channel=channel,
                key_count=channel.key_count,
                live_key_count=channel.live_key_count,
                belief_count=channel_counts.get(channel.name, 0),
                rebuild=runs.get(channel.last_rebuild_id),
            )
            for channel in channels
        ],
        keys=key_page,
        changes=change_page,
    )

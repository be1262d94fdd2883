"""Reads for diagnostics: an owner's health and the peek view, each in a few aggregate queries."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Aggregate, Count, F, Max, Min, Q, QuerySet, Subquery, Sum, Value, Window
from django.db.models.functions import RowNumber
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from atlaso_site.job_runs.models import JobRun
from atlaso_site.lib.paging import Page
from beliefs.models import Belief, CalibrationOutcome
from deposits.domain.types import Deposit as DepositRecord
from deposits.models import (
    CORRECTED,
    IN_CONFLICT,
    NOT_THIN,
    SPLIT,
    ConflictEpisode,
    DeploymentTally,
    Deposit,
    OwnerTally,
    RecallLog,
    ScopeBag,
)
from deposits.selectors.deposits import deposit_records
from deposits.selectors.owners import oldest_open_conflict, open_conflicts_now
from diagnostics.domain.calibration import DiagramBin, Scored, brier, ece, reliability_diagram
from diagnostics.domain.fmi import Diagnostics, FieldCounts, Pillars

# Re-exported: the bench empties the joined points to time a trend's first read.
from diagnostics.joined_points import forget_joined_points as forget_joined_points
from diagnostics.joined_points import joined_points
from diagnostics.models import Snapshot
from diagnostics.sql import owners as owners_sql

SNAPSHOT_WINDOW_DAYS = 30


def _annotated_bags(bags: QuerySet[ScopeBag]) -> QuerySet[ScopeBag]:
    return bags.annotate(size=F("directional") + F("live_open"))


def _bag_aggregates() -> dict[str, Aggregate]:
    # Precision looks at every bag that is not thin evidence, whatever its sides.
    # Counted by user_id (never null), which the owners' covering index holds, unlike id.
    return {
        "live_bags": Count("user_id", filter=Q(size__gt=0)),
        "singleton_bags": Count("user_id", filter=Q(size=1)),
        "multi_bags": Count("user_id", filter=NOT_THIN),
        "agreement_sum": Sum("agreement", filter=NOT_THIN),
        "split_bags": Count("user_id", filter=SPLIT),
        "resolved_bags": Count("user_id", filter=CORRECTED),
        "conflict_bags": Count("user_id", filter=IN_CONFLICT),
        "deposit_count": Sum("size"),
    }


def _recall_aggregates() -> dict[str, Aggregate]:
    return {"recalls": Count("id"), "confident_recalls": Count("id", filter=Q(returned_confident=True))}


@dataclass(frozen=True, slots=True)
class FieldTotals:
    """One owner's (or the pooled deployment's) counts: the pillars' inputs and what a snapshot shows."""

    counts: FieldCounts = FieldCounts()  # noqa: RUF009 (frozen)
    deposit_count: int = 0
    conflict_bag_count: int = 0
    uncertain_belief_count: int = 0
    owner_count: int | None = None

    @property
    def bag_count(self) -> int:
        return self.counts.live_bags

    @property
    def recall_count(self) -> int:
        return self.counts.recalls


def _totals(
    bags: dict[str, Any], recalls: dict[str, Any], uncertain: int, owners: int | None = None
) -> FieldTotals:
    return FieldTotals(
        counts=FieldCounts(
            recalls=_summed(recalls, "recalls"),
            confident_recalls=_summed(recalls, "confident_recalls"),
            live_bags=_summed(bags, "live_bags"),
            singleton_bags=_summed(bags, "singleton_bags"),
            multi_bags=_summed(bags, "multi_bags"),
            agreement_sum=_summed(bags, "agreement_sum", 0.0),
            split_bags=_summed(bags, "split_bags"),
            resolved_bags=_summed(bags, "resolved_bags"),
        ),
        deposit_count=int(_summed(bags, "deposit_count")),
        conflict_bag_count=_summed(bags, "conflict_bags"),
        uncertain_belief_count=uncertain,
        owner_count=owners,
    )


def _summed(row: dict[str, Any], name: str, zero: Any = 0) -> Any:
    """An aggregate as read, or `zero` where it ran over no rows (SQL's NULL) or none was read."""
    return row.get(name) or zero


def field_totals_by_owner(
    user_ids: Sequence[str], *, window_days: int = SNAPSHOT_WINDOW_DAYS, now: datetime
) -> dict[str, FieldTotals]:
    """Every named owner's totals in three grouped queries, whatever the number of owners or bags."""
    bags = {
        row["user_id"]: row
        for row in _annotated_bags(ScopeBag.objects.filter(user_id__in=user_ids))
        .values("user_id")
        .annotate(**_bag_aggregates())
        .order_by()
    }
    recalls = {
        row["user_id"]: row
        for row in RecallLog.objects.filter(
            user_id__in=user_ids, created_at__gt=now - timedelta(days=window_days)
        )
        .values("user_id")
        .annotate(**_recall_aggregates())
        .order_by()
    }
    uncertain = dict(
        Belief.objects.filter(user_id__in=user_ids, is_uncertain=True)
        .values("user_id")
        .annotate(n=Count("id"))
        .order_by()
        .values_list("user_id", "n")
    )
    return {u: _totals(bags.get(u, {}), recalls.get(u, {}), uncertain.get(u, 0)) for u in user_ids}


def field_totals_pooled(*, window_days: int = SNAPSHOT_WINDOW_DAYS, now: datetime) -> FieldTotals:
    """The deployment: the same formulas over every owner's rows pooled, not an average of owners.

    Summed per owner first, then over owners: the rows are read in owner order from the owners'
    covering index (PostgreSQL), and an owner with a live bag is one group, so no DISTINCT.
    """
    aggregates = _bag_aggregates()
    per_owner = _annotated_bags(ScopeBag.objects.all()).values("user_id").annotate(**aggregates).order_by()
    with transaction.atomic():
        if connection.vendor == "postgresql":
            # One process walks the index in owner order faster than two workers whose partial
            # sums are then merged by owner (at 88,876 bags: 24 ms against 32 ms).
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL max_parallel_workers_per_gather = 0")
        pooled = per_owner.aggregate(
            **{f"all_{name}": Sum(name) for name in aggregates},
            owners=Count("user_id", filter=Q(live_bags__gt=0)),
        )
    bags = {name: pooled[f"all_{name}"] for name in aggregates}
    recalls = RecallLog.objects.filter(created_at__gt=now - timedelta(days=window_days)).aggregate(
        **_recall_aggregates()
    )
    uncertain = Belief.objects.filter(is_uncertain=True).count()
    return _totals(bags, recalls, uncertain, owners=pooled["owners"] or 0)


def health(*, user_id: str, window_days: int = 30, now: datetime | None = None) -> Diagnostics:
    """The owner's FMI over the last `window_days` of recalls, from live bag counts."""
    totals = field_totals_by_owner([user_id], window_days=window_days, now=now or timezone.now())[user_id]
    # deposit_count is live deposits; the bag counts already hold exactly that.
    return Diagnostics(
        pillars=totals.counts.pillars(), window_days=window_days, deposit_count=totals.deposit_count
    )


def snapshot_of(user_id: str | None, totals: FieldTotals, now: datetime) -> Snapshot:
    """An (unsaved) snapshot of the totals."""
    pillars = totals.counts.pillars()
    return Snapshot(
        user_id=user_id,
        taken_at=now,
        window_days=SNAPSHOT_WINDOW_DAYS,
        fmi=pillars.fmi,
        coverage=pillars.coverage,
        precision=pillars.precision,
        resolution=pillars.resolution,
        density=pillars.density,
        deposit_count=totals.deposit_count,
        bag_count=totals.bag_count,
        conflict_bag_count=totals.conflict_bag_count,
        uncertain_belief_count=totals.uncertain_belief_count,
        recall_count=totals.recall_count,
        owner_count=totals.owner_count,
    )


@dataclass(frozen=True, slots=True)
class FmiFigure:
    """The FMI a page shows, with the moment it describes.

    It is an owner's or the deployment's latest snapshot (the row the owners list and the trends
    read too), or, while there is none yet, computed when read (`from_snapshot` False, and the page
    says so).
    """

    fmi: int
    pillars: Pillars
    # Live deposits at that moment, which the FMI's sentence reads ("Nothing is stored yet").
    deposit_count: int
    taken_at: datetime
    from_snapshot: bool


def fmi_figure(
    *,
    user_id: str | None,
    now: datetime | None = None,
    points: Sequence[SnapshotPoint] = (),
    live: bool = False,
) -> FmiFigure:
    """An owner's (`user_id` None: the deployment's) FMI as the dashboard's pages show it.

    One figure for one thing: the overview, the owners list, the trends' last points and the
    health page show the latest snapshot's FMI with its time. The owner page heads with the FMI
    now (`live`: what a resolution there moves at once), saying so, and names the snapshot's
    beside it when the two differ. `points`, the same owner's trend when the page read it
    already: its newest point is that latest snapshot, so it spares the query.
    """
    now = now or timezone.now()
    snapshot: Snapshot | SnapshotPoint | None = None if live else (points[-1] if points else None)
    if snapshot is None and not live:
        latest = Snapshot.objects.filter(is_latest=True)
        latest = latest.filter(user_id=user_id) if user_id else latest.filter(user_id__isnull=True)
        snapshot = latest.order_by("-taken_at", "-id").first()
    if snapshot is not None:
        pillars = Pillars(
            coverage=snapshot.coverage,
            precision=snapshot.precision,
            resolution=snapshot.resolution,
            density=snapshot.density,
        )
        return FmiFigure(
            fmi=snapshot.fmi,
            pillars=pillars,
            deposit_count=snapshot.deposit_count,
            taken_at=snapshot.taken_at,
            from_snapshot=True,
        )
    totals = field_totals_by_owner([user_id], now=now)[user_id] if user_id else field_totals_pooled(now=now)
    computed = totals.counts.pillars()
    return FmiFigure(
        fmi=computed.fmi,
        pillars=computed,
        deposit_count=totals.deposit_count,
        taken_at=now,
        from_snapshot=False,
    )


@dataclass(frozen=True, slots=True)
class DeploymentCounts:
    """The deployment's counts now, from the rows every write keeps.

    The owners the owners list totals, the sum of their live deposits, the open conflicts and since
    when the oldest, and the uncertain beliefs the owners list's rows count.
    """

    owners: int
    live_deposits: int
    open_conflicts: int
    oldest_open_started_at: datetime | None
    uncertain_beliefs: int


def deployment_counts() -> DeploymentCounts:
    """What the overview says the deployment holds now, never read from a snapshot.

    One query over the deployment's tally row (the owners list's total, the queue's count).
    """
    live = OwnerTally.objects.filter(live_deposits__gt=0).order_by().values(one=Value(1))
    uncertain = Belief.objects.filter(is_uncertain=True).order_by().values(one=Value(1))
    row = (
        DeploymentTally.objects.filter(id=1)
        .annotate(
            oldest=oldest_open_conflict(),
            live=Subquery(live.annotate(n=Sum("live_deposits")).values("n")),
            uncertain=Subquery(uncertain.annotate(n=Count("id")).values("n")),
        )
        .values_list("owners", "live", "open_conflicts", "oldest", "uncertain")
        .first()
    )
    owners, deposits, conflicts, oldest, uncertain_count = row or (0, 0, 0, None, None)
    if row is None:  # before the first write: no tally row, but beliefs may exist all the same
        uncertain_count = Belief.objects.filter(is_uncertain=True).count()
    return DeploymentCounts(
        owners=owners or 0,
        live_deposits=int(deposits or 0),
        open_conflicts=conflicts or 0,
        oldest_open_started_at=oldest,
        uncertain_beliefs=int(uncertain_count or 0),
    )


@dataclass(frozen=True, slots=True)
class Backlog:
    """The conflict backlog now, and how fast conflicts were resolved in the window."""

    open_conflicts: int
    oldest_open_started_at: datetime | None
    resolved_in_window: int
    median_hours_to_resolution: float | None


def backlog(
    *,
    user_id: str | None = None,
    days: int = 30,
    now: datetime | None = None,
    counts: DeploymentCounts | None = None,
) -> Backlog:
    """The conflict backlog, read from the conflict episodes when asked for.

    Read so, it is current even between snapshots. The deployment's open conflicts come from
    `counts` when the page read them already.
    """
    now = now or timezone.now()
    episodes = (
        ConflictEpisode.objects.all() if user_id is None else ConflictEpisode.objects.filter(user_id=user_id)
    )
    if user_id is None and counts is not None:
        waiting = {"n": counts.open_conflicts, "oldest": counts.oldest_open_started_at}
    elif user_id is None:
        waiting = dict(zip(("n", "oldest"), open_conflicts_now(), strict=True))
    else:
        waiting = episodes.filter(ended_at__isnull=True).aggregate(n=Count("id"), oldest=Min("started_at"))
    spans = episodes.filter(ended_at__gt=now - timedelta(days=days)).values_list("started_at", "ended_at")
    hours = [(ended - started).total_seconds() / 3600 for started, ended in spans]
    return Backlog(
        open_conflicts=waiting["n"],
        oldest_open_started_at=waiting["oldest"],
        resolved_in_window=len(hours),
        median_hours_to_resolution=statistics.median(hours) if hours else None,
    )


@dataclass(frozen=True, slots=True)
class SnapshotPoint:
    """One snapshot as a trend reads it: a plain record read as tuples, not a model instance.

    90 days of 15-minute points are 8,640 of these.
    """

    taken_at: datetime
    fmi: int
    coverage: float
    precision: float
    resolution: float
    density: float
    deposit_count: int
    bag_count: int
    conflict_bag_count: int
    uncertain_belief_count: int
    recall_count: int
    owner_count: int | None


POINT_FIELDS = tuple(f.name for f in dataclass_fields(SnapshotPoint))


def _points(user_id: str | None, days: int, now: datetime) -> list[SnapshotPoint]:
    rows = (
        Snapshot.objects.filter(user_id=user_id) if user_id else Snapshot.objects.filter(user_id__isnull=True)
    )
    window = rows.filter(taken_at__gt=now - timedelta(days=days)).order_by("taken_at", "id")
    return [SnapshotPoint(*values) for values in window.values_list(*POINT_FIELDS)]


def points_json(user_id: str | None, days: int, now: datetime) -> str:
    """The same points as the wire's JSON array, joined from each snapshot's stored form.

    For the API's trend reads: 90 days of 15-minute points are 8,640 objects, and the stored
    forms join in a few milliseconds where reading and formatting the columns takes tens; a
    window read before with the same rows is not read again (see diagnostics.joined_points).
    """
    rows = (
        Snapshot.objects.filter(user_id=user_id) if user_id else Snapshot.objects.filter(user_id__isnull=True)
    )
    window = rows.filter(taken_at__gt=now - timedelta(days=days))
    shape = window.aggregate(n=Count("id"), first=Min("id"), last=Max("id"))
    key = (user_id, shape["n"], shape["first"], shape["last"])
    joined = joined_points.get(key)
    if joined is None:
        joined = "[" + ", ".join(window.order_by("taken_at", "id").values_list("point_json", flat=True)) + "]"
        joined_points.put(key, joined)
    return joined


@dataclass(frozen=True, slots=True)
class HealthHistory:
    user_id: str
    days: int
    points: list[SnapshotPoint]
    backlog: Backlog


def health_history(*, user_id: str, days: int = 30, now: datetime | None = None) -> HealthHistory:
    """An owner's snapshots inside `days`, oldest first, and its conflict backlog."""
    now = now or timezone.now()
    return HealthHistory(
        user_id=user_id,
        days=days,
        points=_points(user_id, days, now),
        backlog=backlog(user_id=user_id, days=days, now=now),
    )


@dataclass(frozen=True, slots=True)
class DeploymentTrend:
    """The deployment's snapshots in a window and its backlog now."""

    points: list[SnapshotPoint]
    backlog: Backlog


def deployment_trend(
    *, days: int = 30, now: datetime | None = None, counts: DeploymentCounts | None = None
) -> DeploymentTrend:
    """What the dashboard draws of the deployment: its snapshots and its backlog.

    Its snapshots, not a pooled recount; its FMI figure, the newest of them, is `fmi_figure`'s. For
    the backlog's `counts`, see backlog.
    """
    now = now or timezone.now()
    return DeploymentTrend(
        points=_points(None, days, now), backlog=backlog(days=days, now=now, counts=counts)
    )


def recent_deposits(*, user_id: str, limit: int = 10) -> list[DepositRecord]:
    """The owner's newest kept (not retracted) deposits, with their state; no count of them all.

    `deposits.selectors.deposits.deposit_page` without its total: counting a large owner's deposits
    costs more than the rest of the owner page.
    """
    rows = list(
        Deposit.objects.filter(user_id=user_id).not_retracted().order_by("-created_at", "-id")[:limit]
    )
    return deposit_records(rows, with_state=True)


def recent_runs(names: Sequence[str], *, limit: int = 10) -> dict[str, list[JobRun]]:
    """Each named job's newest `limit` runs, newest first, in one query (a job never run: [])."""
    newest = (
        JobRun.objects.filter(name__in=names)
        .annotate(
            place=Window(
                RowNumber(), partition_by=[F("name")], order_by=[F("queued_at").desc(), F("id").desc()]
            )
        )
        .filter(place__lte=limit)
        .order_by("name", "place")
    )
    runs: dict[str, list[JobRun]] = {name: [] for name in names}
    for run in newest:
        runs[run.name].append(run)
    return runs


RECENT = timedelta(days=7)


@dataclass(frozen=True, slots=True)
class PeekView:
    """A glance at an owner: newest live deposits, how many are kept, FMI, recent conflict."""

    user_id: str
    deposits: list[DepositRecord]
    total_count: int
    fmi: int
    has_recent_disagreements: bool


def peek(*, user_id: str, limit: int = 10, now: datetime | None = None) -> PeekView:
    """The newest live deposits, the count of non-retracted ones, FMI, and recent conflict."""
    now = now or timezone.now()
    live = Deposit.objects.filter(user_id=user_id).live()
    newest = list(live.order_by("-created_at", "-id")[:limit])
    total = Deposit.objects.filter(user_id=user_id).not_retracted().count()
    conflict_bags = (
        ScopeBag.objects.filter(user_id=user_id, last_deposit_at__gte=now - RECENT).in_conflict().values("id")
    )
    recent_conflict = live.filter(bag_id__in=conflict_bags, created_at__gte=now - RECENT).exists()
    return PeekView(
        user_id=user_id,
        deposits=deposit_records(newest),
        total_count=total,
        fmi=health(user_id=user_id, now=now).fmi,
        has_recent_disagreements=recent_conflict,
    )


@dataclass(frozen=True, slots=True)
class TierCalibration:
    outcomes: int
    brier: float | None
    ece: float | None


@dataclass(frozen=True, slots=True)
class Calibration:
    """How well belief probabilities matched confirmed outcomes, overall and per tier."""

    outcomes: int
    brier: float | None
    ece: float | None
    per_tier: dict[str, TierCalibration]
    diagram: list[DiagramBin]
    is_frequency: bool

    @property
    def outcomes_needed(self) -> int:
        """How many more confirmations before probabilities may be read as frequencies."""
        return max(0, settings.BELIEF_CALIBRATION_MIN_OUTCOMES - self.outcomes)


def calibration() -> Calibration:
    """Brier and ECE over every confirmation outcome, for the deployment and per tier."""
    rows = list(CalibrationOutcome.objects.values_list("top_probability", "correct", "tier"))
    scored = [Scored(p, c) for p, c, _ in rows]
    per_tier: dict[str, list[Scored]] = {}
    for probability, correct, tier in rows:
        per_tier.setdefault(tier or "none", []).append(Scored(probability, correct))
    return Calibration(
        outcomes=len(scored),
        brier=brier(scored),
        ece=ece(scored),
        per_tier={
            tier: TierCalibration(outcomes=len(items), brier=brier(items), ece=ece(items))
            for tier, items in sorted(per_tier.items())
        },
        diagram=reliability_diagram(scored),
        is_frequency=len(scored) >= settings.BELIEF_CALIBRATION_MIN_OUTCOMES,
    )


# The owners list: each sort key and the column it orders by (a leading "-" for descending).
# The first four are columns of the owners' tallies, indexed; the last two are joined in.
OWNER_SORTS = {
    "owner": "user_id",
    "deposits": "live_deposits",
    "conflicts": "open_conflicts",
    "activity": "last_activity",
    "fmi": "fmi",
    "uncertain": "uncertain_beliefs",
}
DEFAULT_OWNER_SORT = "-activity"


@dataclass(frozen=True, slots=True)
class OwnerRow:
    """One memory owner in the owners list: live counts now, FMI as of its latest snapshot."""

    user_id: str
    live_deposits: int
    open_conflicts: int
    uncertain_beliefs: int
    last_activity: datetime | None
    fmi: int | None
    snapshot_at: datetime | None


def _moment(value: Any) -> datetime | None:
    """A raw query's timestamp as an aware datetime, in UTC when the database gave no zone.

    PostgreSQL answers an aware datetime; SQLite UTC as text, or as a naive datetime for a column
    read as it is.
    """
    moment = value if value is None or isinstance(value, datetime) else parse_datetime(str(value))
    return moment if moment is None or moment.tzinfo else moment.replace(tzinfo=UTC)


def _owner_row(row: Sequence[Any]) -> OwnerRow:
    user_id, deposits, conflicts, uncertain, activity, fmi, taken_at = row[:7]
    return OwnerRow(
        user_id=user_id,
        live_deposits=int(deposits),
        open_conflicts=int(conflicts),
        uncertain_beliefs=int(uncertain),
        last_activity=_moment(activity),
        fmi=fmi,
        snapshot_at=_moment(taken_at),
    )


def owner_row(*, user_id: str) -> OwnerRow | None:
    """One owner's row of the owners list, or None before its first write.

    Read by the list's own columns: what the owner page shows of its live deposits, open conflicts
    and uncertain beliefs.
    """
    row = owners_sql.owner_row(user_id)
    return None if row is None else _owner_row(row)


def owner_page(
    *, prefix: str = "", sort: str = DEFAULT_OWNER_SORT, limit: int = 50, offset: int = 0
) -> Page[OwnerRow]:
    """Every owner holding live deposits, read from the owners' tallies (kept by the writes).

    One statement a page (diagnostics.sql.owners); an owner never snapshotted has no FMI and sorts
    last either way.
    """
    column = OWNER_SORTS.get(sort.removeprefix("-"), "last_activity")
    rows = owners_sql.owner_rows(
        prefix=prefix, column=column, descending=sort.startswith("-"), limit=limit, offset=offset
    )
    items = [_owner_row(row) for row in rows]
    if rows:
        total = rows[0][-1] or 0
    elif offset == 0:
        total = 0
    else:  # past the end: the page is empty, so count the owners on their own
        total = owner_page(prefix=prefix, sort=sort, limit=1, offset=0).total
    return Page(items=items, total=total, limit=limit, offset=offset)

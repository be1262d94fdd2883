"""The dashboard pages that bring several apps together: overview, owners, owner, health, jobs.

Each view checks access, parses, calls its selectors and renders. A page's swappable parts are
`{% partialdef %}` blocks of its own template, rendered alone when `request.htmx`. Charts are
drawn on the server (`atlaso_site.ui.charts`) from the snapshots the selectors return.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from atlaso_site.access.roles import is_operator, operator_required, reviewer_required
from atlaso_site.job_runs.models import LOST, STALLED, JobRun, Status, Trigger
from atlaso_site.job_runs.selectors import job_run_get
from atlaso_site.lib.errors import NOT_FOUND, AtlasoError
from atlaso_site.lib.paging import Page
from atlaso_site.lib.user_ids import is_user_id
from atlaso_site.ui import charts, glossary, pages
from beliefs.selectors import belief_page
from deposits.selectors.bags import Bag, bag_page
from deposits.selectors.deposits import owner_exists
from deposits.selectors.embedding import embedding_status
from diagnostics import forms, job_runner, selectors
from diagnostics.domain.fmi import Pillars, band, explain
from diagnostics.forms import HEALTH_DAYS, TREND_DAYS
from diagnostics.models import Snapshot

BAGS_PER_PAGE = 25
OWNERS_PER_PAGE = 50
RECENT_DEPOSITS = 6
BELIEFS_SHOWN = 6
RUNS_PER_JOB = 10
JOB_DESCRIPTIONS = {
    job_runner.RECOMPUTE_DIAGNOSTICS: "Snapshots the FMI of every owner with activity since its last snapshot, "
    "then the deployment's; thins snapshots older than 90 days (beat: every FMI_SNAPSHOT_MINUTES).",
    job_runner.EXPIRE_IDEMPOTENCY_KEYS: "Deletes idempotency entries older than 24 hours (beat: hourly).",
    job_runner.REBUILD_BELIEFS: "Replays belief logs with today's tiers; runs by itself after a tier or "
    "channel change on the provenance page.",
    job_runner.VERIFY_BELIEFS: "Checks every stored belief against the replay of its log and lists any "
    "that differ as mismatches (beat: daily).",
    job_runner.EMBED_DEPOSITS: "Embeds the deposits waiting for a vector (recall by meaning), oldest first. "
    "After each write a task embeds them without recording a run; beat records one for any deposit "
    "left waiting over EMBED_SWEEP_AFTER_SECONDS.",
}
FIRST_RUN = {
    job_runner.RECOMPUTE_DIAGNOSTICS: "Celery beat runs it every few minutes; so does manage.py recompute_diagnostics.",
    job_runner.EXPIRE_IDEMPOTENCY_KEYS: "Celery beat runs it hourly; so does manage.py expire_idempotency_keys.",
    job_runner.REBUILD_BELIEFS: "A tier ceiling or channel change starts one.",
    job_runner.VERIFY_BELIEFS: "Celery beat runs it daily; so does manage.py verify_beliefs.",
    job_runner.EMBED_DEPOSITS: "Beat records a run when a deposit waits too long for its vector; so does "
    "manage.py embed_deposits (a backfill).",
}
# Reported statuses that mean something needs a person: shown in red on the overview.
ALARMING = (Status.FAILED, LOST, STALLED)
ACTIVE = (Status.QUEUED, Status.RUNNING)
NO_OUTCOMES = "No confirmations yet: each Confirm on a belief page records one."
# A job's count that is the length of a list it also records: shown once, as the list.
LENGTH_OF = {"mismatched": "mismatches"}


# ---- Small helpers ------------------------------------------------------------------------


def _span(hours: float | None) -> timedelta | None:
    """Hours as a span rounded to what a person reads: minutes, hours, or days."""
    if hours is None:
        return None
    if hours < 2:
        return timedelta(minutes=max(1, round(hours * 60)))
    if hours < 48:
        return timedelta(hours=round(hours))
    return timedelta(days=round(hours / 24))


# ---- Charts from snapshots ----------------------------------------------------------------

PILLARS = ("coverage", "precision", "resolution", "density")


def _window(days: int, now: datetime) -> dict[str, datetime]:
    return {"start": now - timedelta(days=days), "end": now}


def _fmi_chart(points: Sequence[Snapshot], *, days: int, now: datetime, title: str) -> charts.LineChart:
    return charts.step_chart(
        [charts.Series("FMI", [(p.taken_at, p.fmi) for p in points])],
        title=title,
        y_label="FMI (0–100)",
        y_range=(0, 100),
        **_window(days, now),
    )


def _pillar_chart(points: Sequence[Snapshot], *, days: int, now: datetime) -> charts.LineChart:
    lines = [charts.Series("FMI", [(p.taken_at, p.fmi) for p in points])]
    lines += [
        charts.Series(name, [(p.taken_at, 100 * getattr(p, name)) for p in points], unit="%")
        for name in PILLARS
    ]
    return charts.step_chart(
        lines,
        title=f"FMI and its pillars, last {days} days",
        y_label="FMI; pillars in %",
        y_range=(0, 100),
        # Not wider: on a phone the chart is scaled to the card's width, and a flatter one
        # would leave its lines a few pixels apart.
        size=(720, 280),
        **_window(days, now),
    )


def _backlog_chart(points: Sequence[Snapshot], *, days: int, now: datetime) -> charts.LineChart:
    return charts.step_chart(
        [charts.Series("bags in conflict", [(p.taken_at, p.conflict_bag_count) for p in points])],
        title=f"Bags in conflict at each snapshot, last {days} days",
        y_label="bags in conflict",
        size=(480, 220),
        **_window(days, now),
    )


def _reliability_chart(calibration: selectors.Calibration) -> charts.ReliabilityChart:
    width = 1 / 10
    return charts.reliability_chart(
        [
            charts.Bin(
                low=b.bin * width,
                high=(b.bin + 1) * width,
                confidence=b.confidence,
                frequency=b.frequency,
                count=b.count,
            )
            for b in calibration.diagram
        ],
        title="Calibration: stated probability against how often it was right",
        empty_message=NO_OUTCOMES,
    )


@dataclass(frozen=True, slots=True)
class Health:
    """The FMI, its band and sentence, and the four pillars, however they were computed."""

    fmi: int
    pillars: Pillars
    deposit_count: int

    @classmethod
    def of(cls, figure: selectors.FmiFigure) -> Health:
        return cls(fmi=figure.fmi, pillars=figure.pillars, deposit_count=figure.deposit_count)

    @property
    def band(self) -> str:
        return band(self.fmi)

    @property
    def sentence(self) -> str:
        return explain(self.pillars, deposit_count=self.deposit_count)

    @property
    def pillar_list(self) -> list[tuple[str, float]]:
        return [(name, getattr(self.pillars, name)) for name in PILLARS]


# ---- Job runs as the pages show them -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RunRow:
    """A job run with its reported status and what its row shows."""

    run: JobRun
    status: str
    now: datetime

    @property
    def is_active(self) -> bool:
        """Still queued or running (not lost or stalled): its row keeps polling."""
        return self.status in ACTIVE

    @property
    def mismatches(self) -> list[str]:
        found = (self.run.counts or {}).get("mismatches") or []
        return list(found) if isinstance(found, list) else []

    @property
    def is_alarming(self) -> bool:
        return self.status in ALARMING or bool(self.mismatches)

    @property
    def percent(self) -> int | None:
        if not self.run.total:
            return None
        return min(100, round(100 * self.run.done / self.run.total))

    @property
    def duration(self) -> timedelta | None:
        if self.run.started_at is None:
            return None
        return (self.run.finished_at or self.now) - self.run.started_at

    @property
    def counts(self) -> list[tuple[str, str]]:
        """The run's counts as words: a list by its length and first few items, "none" when empty.

        A count that only repeats a list's length (verify's `mismatched` beside `mismatches`) is
        left out: "mismatched 0; mismatches 0" said one thing twice.
        """
        counts = self.run.counts or {}
        repeated = {count for count, listed in LENGTH_OF.items() if isinstance(counts.get(listed), list)}
        return [(key, _count_text(value)) for key, value in counts.items() if key not in repeated]


def _count_text(value: Any) -> str:
    if isinstance(value, list):
        items = ["/".join(map(str, item)) if isinstance(item, list) else str(item) for item in value]
        shown = ", ".join(items[:5]) + (f" and {len(items) - 5} more" if len(items) > 5 else "")
        return f"{len(items)}: {shown}" if items else "none"
    if isinstance(value, dict):
        return ", ".join(f"{key} {item}" for key, item in value.items())
    return str(value)


def _rows(runs: Sequence[JobRun], now: datetime) -> list[RunRow]:
    return [RunRow(run=run, status=run.reported_status_at(now), now=now) for run in runs]


def _last_runs(now: datetime) -> list[tuple[str, RunRow | None]]:
    """Each job's newest run, or None for a job that never ran."""
    newest = selectors.recent_runs(list(job_runner.JOBS), limit=1)
    return [(name, next(iter(_rows(runs, now)), None)) for name, runs in newest.items()]


# ---- Overview ---------------------------------------------------------------------------


@require_GET
@login_required
def help_page(request: HttpRequest) -> HttpResponse:
    """/help/: every term the pages use, in plain words, each at its own anchor (anyone logged in)."""
    return render(request, "diagnostics/help.html", {"groups": glossary.GROUPS})


@require_GET
@reviewer_required
def overview(request: HttpRequest) -> HttpResponse:
    """The deployment at a glance: FMI, backlog, beliefs, calibration, the last run of each job."""
    now = timezone.now()
    # Counts live, read from the rows the owners list and the queue read; the FMI of the newest
    # snapshot (minutes old, and said so) spares a pass over every bag.
    counts = selectors.deployment_counts()
    deployment = selectors.deployment_trend(days=TREND_DAYS, now=now, counts=counts)
    figure = selectors.fmi_figure(user_id=None, now=now, points=deployment.points)
    last_runs = _last_runs(now)
    context = {
        "fmi": figure,
        "counts": counts,
        "health": Health.of(figure),
        "backlog": deployment.backlog,
        "calibration": selectors.calibration(),
        "trend": _fmi_chart(
            deployment.points, days=TREND_DAYS, now=now, title=f"Deployment FMI, last {TREND_DAYS} days"
        ),
        "last_runs": last_runs,
        "alarming": any(row and row.is_alarming for _, row in last_runs),
        "median_resolution": _span(deployment.backlog.median_hours_to_resolution),
        "trend_days": TREND_DAYS,
        "embedding": embedding_status(),
    }
    return render(request, "diagnostics/overview.html", context)


# ---- Owners ------------------------------------------------------------------------------


OWNER_COLUMNS = (
    ("owner", "Owner"),
    ("deposits", "Live deposits"),
    ("fmi", "FMI"),
    ("conflicts", "Open conflicts"),
    ("uncertain", "Uncertain beliefs"),
    ("activity", "Last activity"),
)


def _owner_columns(current: str) -> list[dict[str, Any]]:
    """Each column's header: the sort its link asks for and its aria-sort now.

    A column not sorted on starts with its useful direction (names A→Z, the rest high or
    recent first); the column sorted on toggles.
    """
    columns = []
    for key, label in OWNER_COLUMNS:
        if current.removeprefix("-") == key:
            descending = current.startswith("-")
            target, state = (key, "descending") if descending else (f"-{key}", "ascending")
        else:
            target, state = (key if key == "owner" else f"-{key}"), "none"
        numeric = key in ("deposits", "fmi", "conflicts", "uncertain")
        columns.append({"key": key, "label": label, "sort": target, "aria": state, "numeric": numeric})
    return columns


@require_GET
@reviewer_required
def owner_list(request: HttpRequest) -> HttpResponse:
    """Every owner with live deposits: prefix search, sortable columns, pages."""
    search = forms.OwnerSearchForm(request.GET).read()
    prefix, sort = search["q"], search["sort"]
    offset = pages.offset_of(pages.page_number(request.GET, size=OWNERS_PER_PAGE), OWNERS_PER_PAGE)
    # Every prefix of an owner id is well formed: a malformed one matches nothing, unasked.
    malformed_prefix = bool(prefix) and not is_user_id(prefix)
    if malformed_prefix:
        page: Page[selectors.OwnerRow] = Page(items=[], total=0, limit=OWNERS_PER_PAGE, offset=offset)
    else:
        page = selectors.owner_page(prefix=prefix, sort=sort, limit=OWNERS_PER_PAGE, offset=offset)
    context = {
        "q": prefix,
        "sort": sort,
        "columns": _owner_columns(sort),
        "pager": pages.Pager.of(request, page, noun="owner"),
        "malformed_prefix": malformed_prefix,
    }
    return render(request, pages.template_for(request, "diagnostics/owners.html", "owners"), context)


# ---- One owner ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BagRow:
    """A bag as the owner page lists it: with its set facets as (name, value) pairs."""

    bag: Bag

    @property
    def scope(self) -> list[tuple[str, Any]]:
        return [(facet, value) for facet, value in self.bag.scope.facets_dict().items() if value is not None]


def _owner_known(user_id: str) -> None:
    """Raise not found for an owner id nothing was ever deposited for."""
    if not owner_exists(user_id):
        raise AtlasoError(NOT_FOUND, pages.NO_OWNER)


@require_GET
@reviewer_required
@pages.owner_view
def owner_detail(request: HttpRequest, user_id: str) -> HttpResponse:
    """One owner: FMI and trend, conflict backlog, its bags (filtered in place), deposits, beliefs."""
    _owner_known(user_id)
    bag_filter = forms.BagFilterForm(request.GET)
    facets, only_conflicts = bag_filter.facets, bag_filter.read()["conflict"]
    bags = bag_page(
        user_id=user_id,
        conflict=True if only_conflicts else None,
        facets=facets,
        limit=BAGS_PER_PAGE,
        offset=pages.offset_of(pages.page_number(request.GET, size=BAGS_PER_PAGE), BAGS_PER_PAGE),
    )
    context: dict[str, Any] = {
        "user_id": user_id,
        "bags": pages.Pager.of(request, bags, noun="bag"),
        "bag_rows": [BagRow(bag) for bag in bags.items],
        "facets": bag_filter.typed,
        "only_conflicts": only_conflicts,
        "problems": bag_filter.problems,
        "filtered": bool(facets) or only_conflicts,
    }
    if request.htmx:
        return render(request, "diagnostics/owner.html#bags", context)
    now = timezone.now()
    history = selectors.health_history(user_id=user_id, days=TREND_DAYS, now=now)
    # The FMI now, which a resolution moves at once, headed "now"; the latest snapshot's (the
    # owners list's and the trend's last point) named beside it, with its time, when it differs.
    # The counts are the owners list row's, live.
    figure = selectors.fmi_figure(user_id=user_id, now=now, live=True)
    latest = selectors.fmi_figure(user_id=user_id, now=now, points=history.points)
    row = selectors.owner_row(user_id=user_id)
    context |= {
        "fmi": figure,
        "latest": latest if latest.from_snapshot and latest.fmi != figure.fmi else None,
        "health": Health.of(figure),
        "live_deposits": row.live_deposits if row else 0,
        "snapshot_minutes": settings.FMI_SNAPSHOT_MINUTES,
        "backlog": history.backlog,
        "trend": _fmi_chart(history.points, days=TREND_DAYS, now=now, title=f"FMI, last {TREND_DAYS} days"),
        "deposits": selectors.recent_deposits(user_id=user_id, limit=RECENT_DEPOSITS),
        "beliefs": belief_page(user_id=user_id, limit=BELIEFS_SHOWN),
        "median_resolution": _span(history.backlog.median_hours_to_resolution),
        "health_window": selectors.SNAPSHOT_WINDOW_DAYS,
        "trend_days": TREND_DAYS,
        "embedding": embedding_status(user_id),
    }
    return render(request, "diagnostics/owner.html", context)


# ---- Health trends ------------------------------------------------------------------------


@require_GET
@reviewer_required
def health_trends(request: HttpRequest) -> HttpResponse:
    """FMI, pillars and the conflict backlog over 7, 30 or 90 days, for the deployment or an owner."""
    query = forms.HealthForm(request.GET).read()
    if query["owner"]:
        return _owner_health(request, query["owner"], days=query["days"])
    now = timezone.now()
    deployment = selectors.deployment_trend(days=query["days"], now=now)
    return _health_page(request, deployment, owner="", days=query["days"], now=now)


@pages.owner_view
def _owner_health(request: HttpRequest, user_id: str, *, days: int) -> HttpResponse:
    """The health page of one owner (`?owner=`), its id guarded as an owner page's is."""
    _owner_known(user_id)
    now = timezone.now()
    history = selectors.health_history(user_id=user_id, days=days, now=now)
    return _health_page(request, history, owner=user_id, days=days, now=now)


def _health_page(
    request: HttpRequest,
    trend: selectors.HealthHistory | selectors.DeploymentTrend,
    *,
    owner: str,
    days: int,
    now: datetime,
) -> HttpResponse:
    """The health page of `trend`'s snapshots and backlog, with calibration (always deployment-wide)."""
    points, backlog = trend.points, trend.backlog
    calibration = selectors.calibration()
    figure = selectors.fmi_figure(user_id=owner or None, now=now, points=points)
    context = {
        "days": days,
        "day_choices": HEALTH_DAYS,
        "owner": owner,
        # The FMI every page shows, with its time (its snapshot may lie before the window).
        "latest": figure if figure.from_snapshot else None,
        "backlog": backlog,
        "median_resolution": _span(backlog.median_hours_to_resolution),
        "pillar_chart": _pillar_chart(points, days=days, now=now),
        "backlog_chart": _backlog_chart(points, days=days, now=now),
        "calibration": calibration,
        "reliability": _reliability_chart(calibration),
    }
    return render(request, "diagnostics/health.html", context)


# ---- Job runs -----------------------------------------------------------------------------


@require_GET
@reviewer_required
def job_runs(request: HttpRequest) -> HttpResponse:
    """Each job's recent runs; a queued or running row polls itself until the run ends."""
    now = timezone.now()
    runs = selectors.recent_runs(list(job_runner.JOBS), limit=RUNS_PER_JOB)
    context = {
        "jobs": [
            {
                "name": name,
                "description": JOB_DESCRIPTIONS.get(name, ""),
                "first_run": FIRST_RUN.get(name, ""),
                "rows": _rows(runs[name], now),
            }
            for name in job_runner.JOBS
        ],
        "startable": job_runner.DASHBOARD_STARTABLE if is_operator(request.user) else (),
        "embedding": embedding_status(),
    }
    return render(request, "diagnostics/jobs.html", context)


@require_GET
@reviewer_required
def job_run(request: HttpRequest, run_id: str) -> HttpResponse:
    """One run: its row alone for htmx polling, else a page of its own."""
    try:
        run = job_run_get(run_id=run_id)
    except AtlasoError as error:
        return pages.not_found(request, error.message)
    row = _rows([run], timezone.now())[0]
    template = "diagnostics/jobs.html#run-row" if request.htmx else "diagnostics/job_run.html"
    return render(request, template, {"row": row})


@require_POST
@operator_required
def job_start(request: HttpRequest, name: str) -> HttpResponse:
    """Queue a run (trigger `dashboard`) through the runner the API uses; back to the jobs page."""
    form = forms.JobStartForm({"name": name})
    if not form.is_valid():
        return pages.not_found(request, f"There is no job {name!r} to start here.")
    run = job_runner.job_start(name=form.cleaned_data["name"], trigger=Trigger.DASHBOARD)
    pages.flash(request, f"Started {name}: run {run.pk} is queued; its row follows it below.")
    return redirect(reverse("diagnostics:jobs"))

"""The dashboard pages of beliefs: an owner's beliefs, one belief (Confirm), and provenance.

Each view checks access, parses, calls one service or selector and renders; an htmx request
gets the swappable part of the page (a `{% partialdef %}` of the page's own template).
"""

from __future__ import annotations

import math
from typing import Any
from uuid import UUID

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import mark_safe
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from atlaso_site.access.models import DEFAULT_CHANNEL_TIER, PERMISSIONS, ApiKey
from atlaso_site.access.roles import operator_required, reviewer_required
from atlaso_site.job_runs.models import JobRun
from atlaso_site.job_runs.selectors import job_run_get
from atlaso_site.lib.errors import AtlasoError
from atlaso_site.ui.pages import Pager, flash, not_found, offset_of, owner_view, page_number, template_for
from beliefs.domain.rule import Verdict
from beliefs.forms import ApiKeyForm, ChannelForm, ConfirmForm, RebindForm, TierForm
from beliefs.models import CalibrationOutcome
from beliefs.selectors import (
    SetAside,
    belief_page,
    belief_verdict,
    provenance_overview,
    revision_page,
    set_aside,
)
from beliefs.services import (
    DEFAULT_PERMISSIONS,
    RecordedObservation,
    api_key_create,
    api_key_revoke,
    belief_confirm,
    channel_bind,
    rule_settings,
    tier_update,
)

BELIEFS_PER_PAGE = 50
REVISIONS_PER_PAGE = 50
SHOWN_VALUES = 10


# --- Helpers every page uses -------------------------------------------------------------------


# --- Beliefs -------------------------------------------------------------------------------


@reviewer_required
@owner_view
def belief_list(request: HttpRequest, user_id: str) -> HttpResponse:
    """An owner's beliefs by key, optionally only the uncertain ones, paged."""
    uncertain = request.GET.get("uncertain") == "1"
    number = page_number(request.GET, size=BELIEFS_PER_PAGE)
    page = belief_page(
        user_id=user_id,
        uncertain=True if uncertain else None,
        limit=BELIEFS_PER_PAGE,
        offset=offset_of(number, BELIEFS_PER_PAGE),
    )
    context = {
        "user_id": user_id,
        "uncertain": uncertain,
        "page": page,
        "pager": Pager.of(
            request, page, bare_first=True, path=reverse("beliefs:belief-list", args=[user_id])
        ),
        "threshold": settings.BELIEF_UNCERTAINTY_THRESHOLD,
    }
    return render(request, template_for(request, "beliefs/beliefs.html", "belief-table"), context)


@reviewer_required
@owner_view
def belief_detail(request: HttpRequest, user_id: str, key: str) -> HttpResponse:
    """One belief: its verdict, what it set aside, its revision log; POST confirms a value."""
    try:
        verdict = belief_verdict(user_id=user_id, key=key)
    except AtlasoError:
        return not_found(
            request,
            f"{user_id} has no belief {key}.",
            back=reverse("beliefs:belief-list", args=[user_id]),
            back_label=f"Every belief of {user_id}",
        )
    if request.method == "POST":
        return _confirm(request, user_id, key, verdict)
    return _render_belief(request, user_id, key, verdict, ConfirmForm(initial={"value": verdict.fact}))


def _confirm(request: HttpRequest, user_id: str, key: str, verdict: Verdict) -> HttpResponse:
    form = ConfirmForm(request.POST)
    if form.is_valid():
        try:
            recorded, outcome = belief_confirm(
                user_id=user_id,
                key=key,
                value=form.cleaned_data["value"],
                reviewer=request.user.get_username(),
            )
        except AtlasoError as error:
            form.add_error("value", error.message)
        else:
            flash(request, confirmed_notice(recorded, outcome))
            if not request.htmx:
                return redirect(reverse("beliefs:belief", args=[user_id, key]))
            fresh = ConfirmForm(initial={"value": recorded.verdict.fact})
            return _render_belief(request, user_id, key, recorded.verdict, fresh)
    return _render_belief(request, user_id, key, verdict, form)


def confirmed_notice(recorded: RecordedObservation, outcome: CalibrationOutcome) -> str:
    """What a reviewer is told after confirming (plain text): the new verdict and what was scored."""
    verdict = recorded.verdict
    if verdict.fact is None:
        now = "The memory still asserts nothing."
    else:
        now = f"The memory now asserts “{verdict.fact}” at {verdict.probability:.1%}."
    if outcome.top_value is None:
        before = "Calibration outcome recorded: before, no value held any mass."
    else:
        right = "right" if outcome.correct else "wrong"
        before = (
            f"Calibration outcome recorded: before, its top value was “{outcome.top_value}” "
            f"at {outcome.top_probability:.1%}, which was {right}."
        )
    return f"Confirmed “{outcome.confirmed_value}”. {now} {before}"


def _render_belief(
    request: HttpRequest, user_id: str, key: str, verdict: Verdict, form: ConfirmForm
) -> HttpResponse:
    number = page_number(request.GET, size=REVISIONS_PER_PAGE)
    revisions = revision_page(
        user_id=user_id, key=key, limit=REVISIONS_PER_PAGE, offset=offset_of(number, REVISIONS_PER_PAGE)
    )
    partial = "revisions" if request.htmx and request.htmx.target == "revisions" else "belief-body"
    context = {
        "user_id": user_id,
        "key": key,
        "verdict": verdict,
        # The heaviest values as bars; a long tail is folded under them.
        "shown_values": verdict.distribution[:SHOWN_VALUES],
        "folded_values": verdict.distribution[SHOWN_VALUES:],
        "folded_mass": math.fsum(mass for _, mass in verdict.distribution[SHOWN_VALUES:]),
        "form": form,
        "revisions": revisions,
        "pager": Pager.of(
            request, revisions, bare_first=True, path=reverse("beliefs:belief", args=[user_id, key])
        ),
        "pivot": rule_settings().pivot,
        "threshold": settings.BELIEF_UNCERTAINTY_THRESHOLD,
        "summary": plain_summary(verdict, set_aside(user_id=user_id, key=key), rule_settings().pivot),
    }
    return render(request, template_for(request, "beliefs/belief.html", partial), context)


def _percent(share: float) -> str:
    """99.6%, 100%, 0.4%: one decimal where it says something."""
    text = f"{100 * share:.1f}".removesuffix(".0")
    return f"{text}%"


def _why_set_aside(groups: list[SetAside], pivot: float) -> str:
    """Why observations did not count: a tier that cannot move beliefs, or too little confidence.

    Either their channel's tier cannot move beliefs, or they were stated with too little confidence
    on a channel that could have.
    """
    capped = [g for g in groups if g.ceiling <= pivot]
    hedged = [g for g in groups if g.ceiling > pivot]
    reasons = []
    if capped:
        names = " and ".join(f"<code>{escape(g.channel)}</code>" for g in capped[:3])
        which = "which cannot change beliefs" if len(capped) == 1 else "whose tiers cannot change beliefs"
        reasons.append(f"came from {names}, {which}")
    if hedged:
        reasons.append("were stated with too little confidence to count")
    return " and ".join(reasons)


def plain_summary(verdict: Verdict, groups: list[SetAside], pivot: float) -> str:
    """The belief in one sentence of plain words, the mathematics left for below it.

    "The memory says soy milk (99.6%). 3 observations counted; 1 set aside because it came from
    web_fetch, which cannot change beliefs." (HTML: the value and channels are escaped.)
    """
    if verdict.fact is None:
        lead = "The memory asserts nothing here yet"
        lead += (
            ": no trusted observation has named a value."
            if not verdict.effective_count
            else ": UNKNOWN still leads."
        )
    else:
        lead = f"The memory says <strong>{escape(verdict.fact)}</strong> ({_percent(verdict.probability)})."
        if verdict.is_uncertain:
            lead += " That is not sure enough to act on without a check."
    counted = verdict.effective_count
    aside = verdict.observation_count - counted
    parts = [f"{counted} observation{pluralize(counted)} counted"]
    if aside:
        because = _why_set_aside(groups, pivot)
        parts.append(f"{aside} set aside because {'it' if aside == 1 else 'they'} {because}")
    return mark_safe(f"{lead} {'; '.join(parts)}.")  # every stored string in it is escaped above


# --- Provenance (operators) ------------------------------------------------------------------

KEYS_PER_PAGE = 25
CHANGES_PER_PAGE = 15


@operator_required
def provenance(request: HttpRequest) -> HttpResponse:
    """Tiers, channels, API keys and the history of changes to them."""
    return _render_provenance(request)


@operator_required
@require_POST
def tier_save(request: HttpRequest) -> HttpResponse:
    """Save a tier's ceiling at once; the beliefs it touches are rebuilt by a job."""
    form = TierForm(request.POST)
    if form.is_valid():
        name, ceiling = form.cleaned_data["tier"], form.cleaned_data["ceiling"]
        try:
            _, run = tier_update(name=name, ceiling=ceiling, actor=request.user.get_username())
        except AtlasoError as error:
            form.add_error("ceiling", error.message)
        else:
            if run is None:
                return _done(request, f"Tier {name} already had ceiling {ceiling:g}: nothing changed.")
            return _done(request, f"Tier {name} now has ceiling {ceiling:g}. {_rebuilding(run)}")
    return _render_provenance(request, tier_form=form)


@operator_required
@require_POST
def channel_create(request: HttpRequest) -> HttpResponse:
    """A new channel bound to a tier."""
    form = ChannelForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        channel, _ = channel_bind(
            name=data["name"],
            tier_name=data["tier"].name,
            description=data["description"],
            actor=request.user.get_username(),
        )
        return _done(request, f"Channel {channel.name} created on tier {channel.tier.name}.")
    return _render_provenance(request, channel_form=form)


@operator_required
@require_POST
def channel_rebind(request: HttpRequest) -> HttpResponse:
    """Bind a channel to another tier; the beliefs it touched are rebuilt by a job."""
    form = RebindForm(request.POST)
    if form.is_valid():
        channel, tier = form.cleaned_data["channel"], form.cleaned_data["tier"]
        _, run = channel_bind(name=channel.name, tier_name=tier.name, actor=request.user.get_username())
        if run is None:
            return _done(request, f"Channel {channel.name} was on tier {tier.name} already: nothing changed.")
        return _done(request, f"Channel {channel.name} is now on tier {tier.name}. {_rebuilding(run)}")
    return _render_provenance(request, rebind_form=form)


@operator_required
@require_POST
@never_cache
def api_key_new(request: HttpRequest) -> HttpResponse:
    """Create a key and show its secret in this response only: never stored, never cached."""
    form = ApiKeyForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            key, secret = api_key_create(
                name=data["name"],
                channel_name=data["channel"].name,
                permissions=data["perm"],
                user_prefix=data["user_prefix"],
                actor=request.user.get_username(),
            )
        except AtlasoError as error:
            form.add_error(None, error.message)
        else:
            return _render_provenance(request, created_key=key, secret=secret)
    return _render_provenance(request, key_form=form)


@operator_required
@require_POST
def api_key_revoke_view(request: HttpRequest, key_id: int) -> HttpResponse:
    """Revoke a key: it answers 401 from now on."""
    key = get_object_or_404(ApiKey, pk=key_id)
    api_key_revoke(key=key, actor=request.user.get_username())
    return _done(request, f"Revoked API key {key.name} ({key.display_prefix}…): it answers 401 from now on.")


@operator_required
def rebuild_progress(request: HttpRequest, run_id: UUID) -> HttpResponse:
    """The rebuild's progress, polled by the page every second until the run ends."""
    try:
        run = job_run_get(run_id=str(run_id))
    except AtlasoError as error:
        return HttpResponse(error.message, status=404, content_type="text/plain")
    return render(request, "beliefs/provenance.html#rebuild", {"run": run})


def _rebuilding(run: JobRun) -> str:
    count = f"{run.total} belief{'' if run.total == 1 else 's'}"
    return f"Rebuilding the {count} it touches; the progress shows beside it until the run ends."


def _done(request: HttpRequest, message: str) -> HttpResponse:
    """After a change, say what it did: htmx gets the page's body, a plain POST a redirect back.

    Either way the page shows the message: the body holds it, or the redirected page's frame does.
    """
    flash(request, message)
    if request.htmx:
        return _render_provenance(request)
    return redirect(reverse("beliefs:provenance"))


def _render_provenance(request: HttpRequest, **context: Any) -> HttpResponse:
    """The provenance page (or, for htmx, the part asked for), with any bound form's errors."""
    path = reverse("beliefs:provenance")
    keys_number = page_number(request.GET, size=KEYS_PER_PAGE, param="keys")
    changes_number = page_number(request.GET, size=CHANGES_PER_PAGE, param="changes")
    overview = provenance_overview(
        keys_limit=KEYS_PER_PAGE,
        keys_offset=offset_of(keys_number, KEYS_PER_PAGE),
        changes_limit=CHANGES_PER_PAGE,
        changes_offset=offset_of(changes_number, CHANGES_PER_PAGE),
    )
    tier_form = context.get("tier_form")
    if tier_form is not None:
        # Its errors show in its tier's row; a tier that is not there (a stale page) gets them on top.
        context["tier_form_elsewhere"] = tier_form.data.get("tier") not in {
            row.tier.name for row in overview.tiers
        }
    target = request.htmx.target if request.htmx and request.method == "GET" else None
    partial = target if target in ("api-keys", "changes") else "provenance-body"
    context.update(
        overview=overview,
        keys_pager=Pager.of(request, overview.keys, param="keys", bare_first=True, path=path),
        changes_pager=Pager.of(request, overview.changes, param="changes", bare_first=True, path=path),
        permissions=PERMISSIONS,
        default_permissions=DEFAULT_PERMISSIONS,
        default_tier=DEFAULT_CHANNEL_TIER,
        pivot=rule_settings().pivot,
    )
    return render(request, template_for(request, "beliefs/provenance.html", partial), context)

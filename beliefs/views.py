"""The dashboard pages of beliefs: an owner's beliefs, one belief (Confirm), and provenance.

Each view checks access, parses, calls one service or selector and renders; an htmx request
gets the swappable part of the page (a `{% partialdef %}` of the page's own template).
"""

from __future__ import annotations

import math
from typing import Any
from uuid import UUID

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from atlaso_site.access.roles import operator_required, reviewer_required
from atlaso_site.job_runs.models import JobRun
from atlaso_site.job_runs.selectors import job_run_get
from atlaso_site.lib.errors import AtlasoError
from atlaso_site.lib.paging import MAX_OFFSET, Page
from atlaso_site.lib.user_ids import USER_ID_RULE, is_user_id
from beliefs.domain.rule import Verdict
from beliefs.domain.values import MAX_VALUE_LENGTH
from beliefs.models import (
    DEFAULT_CHANNEL_TIER,
    PERMISSIONS,
    ApiKey,
    CalibrationOutcome,
    Channel,
    ProvenanceTier,
)
from beliefs.selectors import belief_page, belief_verdict, provenance_overview, revision_page
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


def _page_number(request: HttpRequest, param: str = "page") -> int:
    """The 1-based page asked for in the query; anything malformed is the first page."""
    try:
        return max(1, int(request.GET.get(param, "1")))
    except ValueError:
        return 1


def _offset(number: int, size: int) -> int:
    return min((number - 1) * size, MAX_OFFSET)


def pager(request: HttpRequest, page: Page[Any], param: str = "page", *, path: str = "") -> dict[str, Any]:
    """What a pager shows: where this page stands, and links to its neighbours and ends.

    The links go to `path` (default: this request's) and keep the rest of the query (filters,
    other lists' pages), so a shared link or a reload shows the same state.
    """
    path = path or request.path
    number = page.offset // page.limit + 1
    pages = max(1, -(-page.total // page.limit))

    def link(to: int | None) -> str | None:
        if to is None:
            return None
        query = request.GET.copy()
        query.pop(param, None)
        if to > 1:
            query[param] = str(to)
        return f"{path}?{query.urlencode()}" if query else path

    return {
        "number": number,
        "pages": pages,
        "first": link(1 if number > 1 else None),
        "previous": link(number - 1 if page.has_previous else None),
        "next": link(number + 1 if page.has_next else None),
        "last": link(pages if number < pages else None),
        "first_row": page.offset + 1 if page.items else 0,
        "last_row": page.offset + len(page.items),
        "total": page.total,
    }


def _template(request: HttpRequest, name: str, partial: str) -> str:
    """The page's template, or only its `partial` for an htmx request."""
    return f"{name}#{partial}" if request.htmx else name


def _not_found(request: HttpRequest, message: str, *, back: str, back_label: str) -> HttpResponse:
    """A 404 in the frame, saying what was not found (DEBUG's page would hide the frame)."""
    context = {"message": message, "back": back, "back_label": back_label}
    return render(request, "beliefs/not_found.html", context, status=404)


# --- Beliefs -------------------------------------------------------------------------------


@reviewer_required
def belief_list(request: HttpRequest, user_id: str) -> HttpResponse:
    """An owner's beliefs by key, optionally only the uncertain ones, paged."""
    if not is_user_id(user_id):
        return _not_found(
            request,
            f"“{user_id}” is not a user_id: {USER_ID_RULE}.",
            back="/owners/",
            back_label="Every owner",
        )
    uncertain = request.GET.get("uncertain") == "1"
    number = _page_number(request)
    page = belief_page(
        user_id=user_id,
        uncertain=True if uncertain else None,
        limit=BELIEFS_PER_PAGE,
        offset=_offset(number, BELIEFS_PER_PAGE),
    )
    context = {
        "user_id": user_id,
        "uncertain": uncertain,
        "page": page,
        "pager": pager(request, page),
        "threshold": settings.BELIEF_UNCERTAINTY_THRESHOLD,
    }
    return render(request, _template(request, "beliefs/beliefs.html", "belief-table"), context)


class ConfirmForm(forms.Form):
    value = forms.CharField(
        max_length=MAX_VALUE_LENGTH,
        error_messages={"required": "Type the value you confirm as true."},
        widget=forms.TextInput(attrs={"autocomplete": "off"}),
    )


@reviewer_required
def belief_detail(request: HttpRequest, user_id: str, key: str) -> HttpResponse:
    """One belief: its verdict, what it set aside, its revision log; POST confirms a value."""
    try:
        verdict = belief_verdict(user_id=user_id, key=key)
    except AtlasoError:
        return _not_found(
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
            notice = confirmed_notice(recorded, outcome)
            if not request.htmx:
                messages.success(request, notice)
                return redirect(request.path)
            fresh = ConfirmForm(initial={"value": recorded.verdict.fact})
            return _render_belief(request, user_id, key, recorded.verdict, fresh, notice=notice)
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
    request: HttpRequest, user_id: str, key: str, verdict: Verdict, form: ConfirmForm, *, notice: str = ""
) -> HttpResponse:
    number = _page_number(request)
    revisions = revision_page(
        user_id=user_id, key=key, limit=REVISIONS_PER_PAGE, offset=_offset(number, REVISIONS_PER_PAGE)
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
        "notice": notice,
        "revisions": revisions,
        "pager": pager(request, revisions),
        "pivot": rule_settings().pivot,
        "threshold": settings.BELIEF_UNCERTAINTY_THRESHOLD,
    }
    return render(request, _template(request, "beliefs/belief.html", partial), context)


# --- Provenance (operators) ------------------------------------------------------------------

KEYS_PER_PAGE = 25
CHANGES_PER_PAGE = 15
CEILING_RULE = "A ceiling lies strictly between 0 and 1, e.g. 0.65."


class TierForm(forms.Form):
    tier = forms.CharField(max_length=64)
    ceiling = forms.FloatField(error_messages={"required": CEILING_RULE, "invalid": CEILING_RULE})

    def clean_ceiling(self) -> float:
        ceiling = self.cleaned_data["ceiling"]
        if not 0.0 < ceiling < 1.0:
            raise forms.ValidationError(CEILING_RULE)
        return ceiling


class ChannelForm(forms.Form):
    name = forms.SlugField(
        max_length=64,
        error_messages={
            "required": "Name the channel, e.g. support-bot.",
            "invalid": "A channel name is letters, digits, _ and -, e.g. support-bot.",
        },
    )
    tier = forms.ModelChoiceField(ProvenanceTier.objects.all(), to_field_name="name")
    description = forms.CharField(max_length=500, required=False)

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        if Channel.objects.filter(name=name).exists():
            raise forms.ValidationError(f"There is a channel {name} already; rebind it in the table instead.")
        return name


class RebindForm(forms.Form):
    channel = forms.ModelChoiceField(Channel.objects.select_related("tier"), to_field_name="name")
    tier = forms.ModelChoiceField(ProvenanceTier.objects.all(), to_field_name="name")


class ApiKeyForm(forms.Form):
    name = forms.CharField(max_length=200, error_messages={"required": "Name the key after what uses it."})
    channel = forms.ModelChoiceField(
        Channel.objects.select_related("tier"),
        to_field_name="name",
        error_messages={"required": "Choose the channel the key writes on."},
    )
    perm = forms.MultipleChoiceField(
        choices=[(permission, permission) for permission in PERMISSIONS],
        error_messages={"required": "Choose at least one permission."},
    )
    user_prefix = forms.CharField(max_length=128, required=False)


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


def _done(request: HttpRequest, notice: str) -> HttpResponse:
    """After a change: htmx gets the page's body with the notice; a plain POST redirects back."""
    if request.htmx:
        return _render_provenance(request, notice=notice)
    messages.success(request, notice)
    return redirect("beliefs:provenance")


def _render_provenance(request: HttpRequest, **context: Any) -> HttpResponse:
    """The provenance page (or, for htmx, the part asked for), with any bound form's errors."""
    path = reverse("beliefs:provenance")
    keys_page, changes_page = _page_number(request, "keys"), _page_number(request, "changes")
    overview = provenance_overview(
        keys_limit=KEYS_PER_PAGE,
        keys_offset=_offset(keys_page, KEYS_PER_PAGE),
        changes_limit=CHANGES_PER_PAGE,
        changes_offset=_offset(changes_page, CHANGES_PER_PAGE),
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
        keys_pager=pager(request, overview.keys, "keys", path=path),
        changes_pager=pager(request, overview.changes, "changes", path=path),
        permissions=PERMISSIONS,
        default_permissions=DEFAULT_PERMISSIONS,
        default_tier=DEFAULT_CHANNEL_TIER,
        pivot=rule_settings().pivot,
    )
    return render(request, _template(request, "beliefs/provenance.html", partial), context)

"""The review desk: one conflict at a time, claimed for its reviewer; Skip, Take over, Undo, and
the list of resolutions.

The desk hands out the conflict the reviewer holds, or claims the oldest nobody holds (their
skips last); its actions answer with the next one in place (htmx) or redirect back to it.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import push_url

from atlaso_site.access.roles import reviewer_required
from atlaso_site.lib.errors import NOT_FOUND, AtlasoError
from atlaso_site.ui.pages import Pager, flash, offset_of, owner_view
from deposits.domain.types import DIRECTIONAL
from deposits.forms import QUEUE_PAGE_SIZE, DeskFilter, DeskResolveForm, NextForm, ResolvedFilter, SkipForm
from deposits.selectors.bags import bag_detail
from deposits.selectors.review import claim_on, conflict_since, desk_progress, resolution_page, skipped_by
from deposits.services.review import (
    ALREADY_RESOLVED,
    claim_bag,
    claim_next,
    claim_renew,
    claim_span,
    claim_take_over,
    claims_release_others,
    conflict_skip,
    resolution_undo,
    skip_return,
    taken_from,
)
from deposits.views import _bag_id, _groups, _resolve, _rows, last_resolution, refused_form, refused_redirect


def _desk_url(owner: str) -> str:
    return reverse("deposits:desk") + (f"?{urlencode({'owner': owner})}" if owner else "")


def _reviewer(request: HttpRequest) -> str:
    return request.user.get_username()


def _tell_taken_over(request: HttpRequest) -> None:
    """A reviewer's next page after someone took their conflict over says so, once."""
    for claim in taken_from(reviewer=_reviewer(request)):
        flash(request, f"{claim.reviewer} took over {claim.user_id}’s conflict from you; it is theirs now.")


def _conflict(user_id: str, bag_id: str) -> dict[str, object] | None:
    """What the desk shows of one conflict: its live directional deposits by side, in the order
    positive, negative, cautionary; None when it is no longer in conflict."""
    bag = bag_detail(user_id=user_id, bag_id=bag_id)
    if not bag.has_disagreement:
        return None
    live = [d for d in bag.deposits if d.is_live]
    sides = _groups(_rows(live), bag.stats, DIRECTIONAL)
    return {"bag": bag, "sides": sides, "since": conflict_since(user_id, bag_id), "claim": claim_on(bag_id)}


def _desk(
    request: HttpRequest,
    owner: str,
    *,
    shown: tuple[str, str] | None = None,
    form: DeskResolveForm | None = None,
    skip_form: SkipForm | None = None,
) -> HttpResponse:
    """The desk page (htmx: the desk alone). `shown`: a conflict to show again (a refused
    action's), else the one the desk claims for the reviewer now."""
    reviewer = _reviewer(request)
    _tell_taken_over(request)
    conflict = None
    if shown is not None:
        conflict = _conflict(*shown)
    if conflict is None:
        for _attempt in range(3):  # a claimed bag resolved by an agent meanwhile: the next one
            claimed = claim_next(reviewer=reviewer, owner_prefix=owner)
            if claimed is None:
                break
            conflict = _conflict(*claimed)
            if conflict is not None:
                claims_release_others(reviewer=reviewer, owner_prefix=owner, keep=claimed[1])
                break
    failed = request.method == "POST" and skip_form is not None and bool(skip_form.errors)
    context = {
        "owner": owner,
        "conflict": conflict,
        "form": form or DeskResolveForm(),
        "skip_form": skip_form or SkipForm(),
        "progress": desk_progress(reviewer=reviewer, owner_prefix=owner),
        "skipped": skipped_by(reviewer=reviewer, owner_prefix=owner),
        "last": last_resolution(request),
        "here": _desk_url(owner),
        "now": timezone.now(),
        "claim_minutes": f"{claim_span().total_seconds() / 60:g}",
    }
    if request.htmx:
        response = render(request, "deposits/desk.html#desk", context)
        return push_url(response, _desk_url(owner))
    return render(request, "deposits/desk.html", context, status=422 if failed else 200)


@reviewer_required
@require_GET
def desk(request: HttpRequest) -> HttpResponse:
    owner = DeskFilter(request.GET).owner_prefix()
    refused = refused_form(request, "desk", DeskResolveForm)
    if refused is not None:
        user_id, bag_id, form = refused
        return _desk(request, owner, shown=(user_id, bag_id), form=form)
    return _desk(request, owner)


def _after(request: HttpRequest, owner: str) -> HttpResponse:
    """What an action that moved on answers: the next conflict in place, or a redirect to it."""
    if request.htmx:
        return _desk(request, owner)
    return redirect(_desk_url(owner))


@reviewer_required
@require_POST
@owner_view
def desk_resolve(request: HttpRequest, user_id: str, bag_id: str) -> HttpResponse:
    """Resolve on the desk (ticks, or a "… holds" button): the next conflict, or this one with why not."""
    bag_id = _bag_id(user_id, bag_id)
    form = DeskResolveForm(request.POST)
    owner = form.owner_prefix()
    claim_renew(reviewer=_reviewer(request), bag_id=bag_id)
    if _resolve(request, user_id, bag_id, form):
        return _after(request, owner)
    if form.refusal_code == ALREADY_RESOLVED:
        # Gone from the queue meanwhile: say so, with what was typed, and show the next one.
        typed = (
            ("Your reason", form.cleaned_data.get("reason")),
            ("What holds", form.cleaned_data.get("holds")),
        )
        kept = "".join(
            f" {name}, not saved: “{text.strip()}”." for name, text in typed if text and text.strip()
        )
        flash(request, f"Not resolved: {form.error_message}.{kept}")
        return _after(request, owner)
    if request.htmx:
        return _desk(request, owner, shown=(user_id, bag_id), form=form)
    return refused_redirect(request, "desk", user_id, bag_id, form, _desk_url(owner))


@reviewer_required
@require_POST
@owner_view
def desk_skip(request: HttpRequest, user_id: str, bag_id: str) -> HttpResponse:
    """Skip: behind every other conflict for this reviewer; the next one is shown."""
    bag_id = _bag_id(user_id, bag_id)
    form = SkipForm(request.POST)
    owner = form.owner_prefix()
    if not form.is_valid():
        return _desk(request, owner, shown=(user_id, bag_id), skip_form=form)
    conflict_skip(reviewer=_reviewer(request), user_id=user_id, bag_id=bag_id, note=form.cleaned_data["note"])
    flash(
        request, f"Skipped {user_id}’s conflict: it comes back after every other one, under “Skipped by you”."
    )
    return _after(request, owner)


@reviewer_required
@require_POST
@owner_view
def desk_return(request: HttpRequest, user_id: str, bag_id: str) -> HttpResponse:
    """Back to a skipped conflict: it is claimed and shown (unless another reviewer is on it)."""
    bag_id = _bag_id(user_id, bag_id)
    owner = DeskFilter(request.POST).owner_prefix()
    if not skip_return(reviewer=_reviewer(request), user_id=user_id, bag_id=bag_id):
        claim = claim_on(bag_id)
        holder = f"{claim.reviewer} is on it now" if claim else "it is no longer in conflict"
        flash(request, f"Could not go back to {user_id}’s conflict: {holder}.")
    return _after(request, owner)


@reviewer_required
@require_POST
@owner_view
def take_over(request: HttpRequest, user_id: str, bag_id: str) -> HttpResponse:
    """The claim passes to this reviewer; back where the button was (the bag page by default)."""
    bag_id = _bag_id(user_id, bag_id)
    back = NextForm(request.POST).target(request, reverse("deposits:bag", args=[user_id, bag_id]))
    try:
        before = claim_take_over(reviewer=_reviewer(request), user_id=user_id, bag_id=bag_id)
    except AtlasoError as error:
        if error.code == NOT_FOUND:
            raise
        flash(request, f"Not taken over: {error.message}.")
        return redirect(back)
    flash(
        request, f"You are on {user_id}’s conflict now" + (f" (taken over from {before})." if before else ".")
    )
    return redirect(back)


@reviewer_required
@require_POST
@owner_view
def undo(request: HttpRequest, user_id: str, deposit_id: str) -> HttpResponse:
    """Undo a resolution: its deposit retracted, the conflict back; back where the button was."""
    back = NextForm(request.POST).target(request, reverse("deposits:resolved"))
    reviewer = _reviewer(request)
    try:
        done = resolution_undo(user_id=user_id, deposit_id=deposit_id, reviewer=reviewer)
    except AtlasoError as error:
        if error.code == NOT_FOUND:
            raise
        flash(request, f"Not undone: {error.message}.")
        return redirect(back)
    flash(
        request,
        f"Undone: {user_id}’s bag is back in conflict, the {done.superseded} deposit"
        f"{'' if done.superseded == 1 else 's'} it superseded live again.",
    )
    if back.partition("?")[0] == reverse("deposits:desk"):
        # Undone from the desk: the conflict is handed straight back, to be resolved again (the
        # desk shows the conflict its reviewer took last, and releases the one it showed before).
        claim_bag(reviewer=reviewer, user_id=user_id, bag_id=done.bag_id)
    return redirect(back)


@reviewer_required
@require_GET
def resolved(request: HttpRequest) -> HttpResponse:
    """Resolutions, newest first: who, when, which side held, why, the bag, who undid it."""
    mine, owner, number = ResolvedFilter(request.GET).query()
    reviewer = _reviewer(request) if mine else None
    page = resolution_page(
        reviewer=reviewer,
        owner_prefix=owner,
        limit=QUEUE_PAGE_SIZE,
        offset=offset_of(number, QUEUE_PAGE_SIZE),
    )
    pager = Pager.of(request, page, noun="resolution")
    if pager.number > pager.pages:
        query = request.GET.copy()
        query["page"] = str(pager.pages)
        return redirect(f"{reverse('deposits:resolved')}?{query.urlencode()}")
    context = {
        "page": page,
        "pager": pager,
        "mine": mine,
        "owner": owner,
        "here": request.get_full_path(),
        "last": last_resolution(request),
    }
    template = "deposits/resolved.html#resolved" if request.htmx else "deposits/resolved.html"
    return render(request, template, context)


__all__ = ["desk", "desk_resolve", "desk_return", "desk_skip", "resolved", "take_over", "undo"]

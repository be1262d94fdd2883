"""The review desk: one conflict at a time, claimed for its reviewer; Skip, Take over and Undo.

The desk hands out the conflict the reviewer holds, or claims the oldest nobody holds (their
skips last); its actions answer with the next one in place (htmx) or redirect back to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import push_url

from atlaso_site.access.roles import reviewer_required
from atlaso_site.lib.errors import NOT_FOUND, AtlasoError
from atlaso_site.ui.pages import flash, owner_view
from deposits.forms import DeskFilter, DeskResolveForm, NextForm, SkipForm
from deposits.selectors.bags import Bag, bag_detail
from deposits.selectors.review import Claim, claim_on, conflict_since, desk_progress, skipped_by
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
from deposits.views.shared import (
    Group,
    checked_bag_id,
    conflict_sides,
    last_resolution,
    refused_form,
    refused_redirect,
    resolve,
    reviewer_of,
)

# How many claimed conflicts the desk looks past when an agent resolved them meanwhile.
CLAIM_ATTEMPTS = 3


@dataclass(frozen=True, slots=True)
class DeskConflict:
    """The conflict the desk shows: its bag, its live deposits by side, since when, who is on it."""

    bag: Bag
    sides: tuple[Group, ...]
    since: datetime | None
    claim: Claim | None


def _desk_url(owner: str) -> str:
    """The desk's address with its owner filter."""
    return reverse("deposits:desk") + (f"?{urlencode({'owner': owner})}" if owner else "")


def _tell_taken_over(request: HttpRequest) -> None:
    """A reviewer's next page after someone took their conflict over says so, once."""
    for claim in taken_from(reviewer=reviewer_of(request)):
        flash(request, f"{claim.reviewer} took over {claim.user_id}’s conflict from you; it is theirs now.")


def _conflict(user_id: str, bag_id: str) -> DeskConflict | None:
    """One conflict as the desk shows it (positive, negative, cautionary); None once it is resolved."""
    bag = bag_detail(user_id=user_id, bag_id=bag_id)
    if not bag.has_disagreement:
        return None
    live = [d for d in bag.deposits if d.is_live]
    since = conflict_since(user_id, bag_id)
    return DeskConflict(bag=bag, sides=conflict_sides(live, bag.stats), since=since, claim=claim_on(bag_id))


def _claimed_conflict(reviewer: str, owner: str) -> DeskConflict | None:
    """The conflict the desk claims for the reviewer now, releasing the others they held in the filter."""
    for _attempt in range(CLAIM_ATTEMPTS):
        claimed = claim_next(reviewer=reviewer, owner_prefix=owner)
        if claimed is None:
            return None
        conflict = _conflict(*claimed)
        if conflict is not None:
            claims_release_others(reviewer=reviewer, owner_prefix=owner, keep=claimed[1])
            return conflict
    return None


def _desk(
    request: HttpRequest,
    owner: str,
    *,
    shown: tuple[str, str] | None = None,
    form: DeskResolveForm | None = None,
    skip_form: SkipForm | None = None,
) -> HttpResponse:
    """The desk page (htmx: the desk alone).

    `shown`: a conflict to show again (a refused action's), else the one the desk claims for the
    reviewer now.
    """
    reviewer = reviewer_of(request)
    _tell_taken_over(request)
    conflict = _conflict(*shown) if shown is not None else None
    if conflict is None:
        conflict = _claimed_conflict(reviewer, owner)
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
    failed = request.method == "POST" and skip_form is not None and bool(skip_form.errors)
    return render(request, "deposits/desk.html", context, status=422 if failed else 200)


def _after(request: HttpRequest, owner: str) -> HttpResponse:
    """What an action that moved on answers: the next conflict in place, or a redirect to it."""
    if request.htmx:
        return _desk(request, owner)
    return redirect(_desk_url(owner))


@reviewer_required
@require_GET
def desk(request: HttpRequest) -> HttpResponse:
    """The desk: the conflict it hands the reviewer, or a Resolve refused without JavaScript, once."""
    owner = DeskFilter(request.GET).owner_prefix()
    refused = refused_form(request, "desk", DeskResolveForm)
    if refused is not None:
        user_id, bag_id, form = refused
        return _desk(request, owner, shown=(user_id, bag_id), form=form)
    return _desk(request, owner)


def _not_saved(form: DeskResolveForm) -> str:
    """What the reviewer typed into a Resolve that found its conflict gone, to say it was not saved."""
    typed = (
        ("Your reason", form.cleaned_data.get("reason")),
        ("What holds", form.cleaned_data.get("holds")),
    )
    return "".join(f" {name}, not saved: “{text.strip()}”." for name, text in typed if text and text.strip())


@reviewer_required
@require_POST
@owner_view
def desk_resolve(request: HttpRequest, user_id: str, bag_id: str) -> HttpResponse:
    """Resolve on the desk (ticks, or a "… holds" button): the next conflict, or this one with why not."""
    bag_id = checked_bag_id(user_id, bag_id)
    form = DeskResolveForm(request.POST)
    owner = form.owner_prefix()
    claim_renew(reviewer=reviewer_of(request), bag_id=bag_id)
    if resolve(request, user_id, bag_id, form):
        return _after(request, owner)
    if form.refusal_code == ALREADY_RESOLVED:
        # Gone from the queue meanwhile: say so, with what was typed, and show the next one.
        flash(request, f"Not resolved: {form.error_message}.{_not_saved(form)}")
        return _after(request, owner)
    if request.htmx:
        return _desk(request, owner, shown=(user_id, bag_id), form=form)
    return refused_redirect(request, "desk", user_id, bag_id, form, _desk_url(owner))


@reviewer_required
@require_POST
@owner_view
def desk_skip(request: HttpRequest, user_id: str, bag_id: str) -> HttpResponse:
    """Skip: behind every other conflict for this reviewer; the next one is shown."""
    bag_id = checked_bag_id(user_id, bag_id)
    form = SkipForm(request.POST)
    owner = form.owner_prefix()
    if not form.is_valid():
        return _desk(request, owner, shown=(user_id, bag_id), skip_form=form)
    note = form.cleaned_data["note"]
    conflict_skip(reviewer=reviewer_of(request), user_id=user_id, bag_id=bag_id, note=note)
    flash(
        request, f"Skipped {user_id}’s conflict: it comes back after every other one, under “Skipped by you”."
    )
    return _after(request, owner)


@reviewer_required
@require_POST
@owner_view
def desk_return(request: HttpRequest, user_id: str, bag_id: str) -> HttpResponse:
    """Back to a skipped conflict: it is claimed and shown (unless another reviewer is on it)."""
    bag_id = checked_bag_id(user_id, bag_id)
    owner = DeskFilter(request.POST).owner_prefix()
    if not skip_return(reviewer=reviewer_of(request), user_id=user_id, bag_id=bag_id):
        claim = claim_on(bag_id)
        holder = f"{claim.reviewer} is on it now" if claim else "it is no longer in conflict"
        flash(request, f"Could not go back to {user_id}’s conflict: {holder}.")
    return _after(request, owner)


@reviewer_required
@require_POST
@owner_view
def take_over(request: HttpRequest, user_id: str, bag_id: str) -> HttpResponse:
    """The claim passes to this reviewer; back where the button was (the bag page by default)."""
    bag_id = checked_bag_id(user_id, bag_id)
    back = NextForm(request.POST).target(request, reverse("deposits:bag", args=[user_id, bag_id]))
    try:
        before = claim_take_over(reviewer=reviewer_of(request), user_id=user_id, bag_id=bag_id)
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
    reviewer = reviewer_of(request)
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


__all__ = ["desk", "desk_resolve", "desk_return", "desk_skip", "take_over", "undo"]

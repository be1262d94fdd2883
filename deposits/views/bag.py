"""The bag page: a bag's deposits by polarity with the edges between them, Resolve and its history."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from atlaso_site.access.roles import reviewer_required
from atlaso_site.ui.pages import owner_view, template_for
from deposits.domain.types import POLARITIES
from deposits.forms import ResolveForm
from deposits.selectors.bags import bag_detail
from deposits.selectors.deposits import edges_touching
from deposits.selectors.review import bag_resolutions, claim_on
from deposits.views.shared import (
    checked_bag_id,
    deposit_rows,
    form_status,
    last_resolution,
    polarity_groups,
    refused_form,
    refused_redirect,
    resolve,
    reviewer_of,
)


def _bag(request: HttpRequest, user_id: str, bag_id: str, form: ResolveForm | None = None) -> HttpResponse:
    """The bag page (htmx: the bag alone); `form` a refused resolution to show again with its error."""
    bag = bag_detail(user_id=user_id, bag_id=checked_bag_id(user_id, bag_id))
    edges = edges_touching(user_id=user_id, deposit_ids=[d.id for d in bag.deposits])
    groups = polarity_groups(deposit_rows(bag.deposits, edges=edges), bag.stats, POLARITIES)
    claim = claim_on(bag.bag_id) if bag.has_disagreement else None
    held_by_other = claim is not None and claim.held_by_other(reviewer_of(request))
    context = {
        "bag": bag,
        "groups": groups,
        "edges": edges,
        "superseded": sum(group.superseded for group in groups),
        "form": form or ResolveForm(),
        "claim": claim,
        "held_by_other": held_by_other,
        "can_resolve": bag.has_disagreement and not held_by_other,
        "resolutions": bag_resolutions(user_id=user_id, bag_id=bag.bag_id),
        "last": last_resolution(request),
        "here": reverse("deposits:bag", args=[user_id, bag.bag_id]),
    }
    template = template_for(request, "deposits/bag.html", "bag")
    return render(request, template, context, status=form_status(request, form is not None))


@reviewer_required
@require_GET
@owner_view
def bag(request: HttpRequest, user_id: str, bag_id: str) -> HttpResponse:
    """The bag page, with a Resolve refused without JavaScript shown again once."""
    refused = refused_form(request, "bag", ResolveForm)
    if refused is not None and refused[:2] == (user_id, bag_id):
        return _bag(request, user_id, bag_id, refused[2])
    return _bag(request, user_id, bag_id)


@reviewer_required
@require_POST
@owner_view
def bag_resolve_view(request: HttpRequest, user_id: str, bag_id: str) -> HttpResponse:
    """Resolve on the bag page: the bag page again, showing it resolved (htmx: in place)."""
    form = ResolveForm(request.POST)
    if not resolve(request, user_id, checked_bag_id(user_id, bag_id), form):
        if request.htmx:
            return _bag(request, user_id, bag_id, form)
        to = reverse("deposits:bag", args=[user_id, bag_id])
        return refused_redirect(request, "bag", user_id, bag_id, form, to)
    if not request.htmx:
        return redirect("deposits:bag", user_id=user_id, bag_id=bag_id)
    return _bag(request, user_id, bag_id)


__all__ = ["bag", "bag_resolve_view"]

"""The resolutions list: who resolved which bag, when, which side held and why; Undo from it."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from atlaso_site.access.roles import reviewer_required
from atlaso_site.ui.pages import Pager, offset_of
from deposits.forms import QUEUE_PAGE_SIZE, ResolvedFilter
from deposits.selectors.review import resolution_page
from deposits.views.shared import last_resolution, reviewer_of


@reviewer_required
@require_GET
def resolved(request: HttpRequest) -> HttpResponse:
    """Resolutions, newest first: who, when, which side held, why, the bag, who undid it."""
    mine, owner, number = ResolvedFilter(request.GET).query()
    reviewer = reviewer_of(request) if mine else None
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


__all__ = ["resolved"]

"""The recall playground: what an agent's `GET /recall` answers, tried from the dashboard."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET
from django_htmx.http import push_url

from atlaso_site.access.roles import reviewer_required
from atlaso_site.lib.errors import NOT_FOUND, AtlasoError
from atlaso_site.ui.pages import NO_OWNER, owner_view
from deposits.domain.recall import MAX_LIMIT
from deposits.forms import DEFAULT_RECALL_LIMIT, RecallForm
from deposits.selectors.deposits import channel_tiers, owner_exists
from deposits.selectors.recall import SearchResults, recall


@reviewer_required
@require_GET
@owner_view
def recall_playground(request: HttpRequest, user_id: str) -> HttpResponse:
    """What an agent's `GET /recall` answers, without counting toward Coverage (no RecallLog)."""
    if not owner_exists(user_id):
        raise AtlasoError(NOT_FOUND, NO_OWNER)
    form = RecallForm(request.GET)
    asked = "q" in request.GET
    results: SearchResults | None = None
    if asked and form.is_valid():
        query = form.cleaned_data
        try:
            results = recall(
                user_id=user_id,
                query=query["q"],
                facets=form.facets,
                limit=query["limit"],
                mode=query["mode"],
            )
        except AtlasoError as error:
            form.refuse(error)
    context = {"user_id": user_id, "form": form, "asked": asked, "max_limit": MAX_LIMIT}
    if results is not None:
        context |= _results_context(user_id, results, form.facets)
    if not request.htmx:
        return render(request, "deposits/recall.html", context)
    response = render(request, "deposits/recall.html#playground", context)
    return push_url(response, _recall_url(user_id, form))


def _results_context(user_id: str, results: SearchResults, facets: Mapping[str, Any]) -> dict[str, Any]:
    """The hits with their channels' tiers, and how many conflict bags lie beyond the limit."""
    tiers = channel_tiers(hit.deposit.channel for hit in results)
    shown = {hit.bag_id for hit in results if hit.has_disagreement}
    owner_page = reverse("diagnostics:owner", args=[user_id])
    return {
        "results": results,
        "hits": [(hit, tiers.get(hit.deposit.channel or "")) for hit in results],
        "conflict_bags_shown": len(shown),
        # The aggregate flags count every matching bag; the hits stop at the limit.
        "conflict_bags_beyond": results.conflict_bag_count - len(shown),
        "beyond_url": f"{owner_page}?" + urlencode({"conflict": 1, **facets}),
    }


def _recall_url(user_id: str, form: RecallForm) -> str:
    """The playground's address for this query: the form sends every field, the link keeps those given."""
    default = ("limit", str(DEFAULT_RECALL_LIMIT))
    query = {name: v for name, v in form.typed.items() if name == "q" or (v and (name, v) != default)}
    return reverse("deposits:recall", args=[user_id]) + f"?{urlencode(query)}"


__all__ = ["recall_playground"]

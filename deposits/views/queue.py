"""The conflict queue: every open conflict, the longest waiting first, each resolvable in place."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import push_url, reswap, retarget

from atlaso_site.access.roles import reviewer_required
from atlaso_site.lib.paging import Page
from atlaso_site.ui.pages import Pager, offset_of, owner_view
from deposits.forms import QUEUE_PAGE_SIZE, QueueFilter, QueueResolveForm, ResolveForm
from deposits.selectors.bags import QueueItem, conflict_queue, queue_item
from deposits.selectors.deposits import channel_tiers
from deposits.selectors.review import Claim, claims_on
from deposits.views.shared import (
    Group,
    checked_bag_id,
    conflict_sides,
    form_status,
    last_resolution,
    refused_form,
    refused_redirect,
    resolve,
    reviewer_of,
)

#: A refused Resolve to show again in the queue: the bag as it is now, and the form as sent.
Refused = tuple[QueueItem, ResolveForm]


@dataclass(frozen=True, slots=True)
class QueueEntry:
    """A queue item as shown: its sides with tiers, and the Resolve form (refilled after an error)."""

    item: QueueItem
    sides: tuple[Group, ...]
    form: ResolveForm = field(default_factory=ResolveForm)
    claim: Claim | None = None
    # Whether the claim is someone else's: then only Take over is offered.
    held_by_other: bool = False

    @property
    def resolvable_here(self) -> bool:
        """In conflict, nobody else on it, and every live directional deposit shown (none superseded unseen)."""
        return self.item.bag.has_disagreement and self.item.more == 0 and not self.held_by_other


def _in_place(items: Sequence[QueueItem], refused: QueueItem) -> list[QueueItem]:
    """The items with the refused Resolve's bag in its place, or first when it left the page meanwhile."""
    shown = list(items)
    at = next((i for i, item in enumerate(shown) if item.bag.bag_id == refused.bag.bag_id), None)
    if at is None:
        return [refused, *shown]
    shown[at] = refused
    return shown


def queue_entries(
    items: Sequence[QueueItem], *, reviewer: str, refused: Refused | None = None
) -> list[QueueEntry]:
    """Each item with its tiers and claim, in one query each for the page.

    A refused Resolve is shown in its bag's place with what was sent, or first when its bag left
    the page meanwhile.
    """
    forms: dict[str, ResolveForm] = {}
    if refused is not None:
        item, forms[item.bag.bag_id] = refused
        items = _in_place(items, item)
    tiers = channel_tiers(d.channel for item in items for d in item.deposits)
    claims = claims_on(item.bag.bag_id for item in items)
    entries = []
    for item in items:
        claim = claims.get(item.bag.bag_id)
        entries.append(
            QueueEntry(
                item=item,
                sides=conflict_sides(item.deposits, item.bag.stats, tiers=tiers),
                form=forms.get(item.bag.bag_id) or ResolveForm(),
                claim=claim,
                held_by_other=claim is not None and claim.held_by_other(reviewer),
            )
        )
    return entries


def _queue_url(owner: str, number: int) -> str:
    """The queue's address with its filter and page (each left out at its default)."""
    query = {key: value for key, value in (("owner", owner), ("page", number)) if value and value != 1}
    return reverse("deposits:conflicts") + (f"?{urlencode(query)}" if query else "")


def _queue_page(owner: str, number: int) -> Page[QueueItem]:
    """One page of the queue, filtered by owner id prefix."""
    return conflict_queue(
        owner_prefix=owner, limit=QUEUE_PAGE_SIZE, offset=offset_of(number, QUEUE_PAGE_SIZE)
    )


def _queue_pager(request: HttpRequest, page: Page[QueueItem], owner: str) -> Pager:
    """The queue's pager; answering a Resolve, its links keep the filter the form sent."""
    query = None
    if request.method != "GET":  # a POST's own query is empty: the queue it came from is in its form
        query = QueryDict(mutable=True)
        if owner:
            query["owner"] = owner
    return Pager.of(request, page, path=reverse("deposits:conflicts"), noun="conflict", query=query)


def _queue(request: HttpRequest, owner: str, number: int, refused: Refused | None = None) -> HttpResponse:
    """The queue page (htmx: its list alone); `refused` a Resolve to show again with its error."""
    page = _queue_page(owner, number)
    pager = _queue_pager(request, page, owner)
    if pager.number > pager.pages:  # past the end (the last item of the last page was resolved)
        if request.method == "GET" and not request.htmx:
            return redirect(_queue_url(owner, pager.pages))
        page = _queue_page(owner, pager.pages)
        pager = _queue_pager(request, page, owner)
    context = {
        "page": page,
        "pager": pager,
        "entries": queue_entries(page.items, reviewer=reviewer_of(request), refused=refused),
        "owner": owner,
        "number": pager.number,
        "last": last_resolution(request),
        "here": _queue_url(owner, pager.number),
    }
    if request.htmx:
        response = render(request, "deposits/conflicts.html#queue", context)
        if pager.number != number:
            push_url(response, _queue_url(owner, pager.number))
        return response
    status = form_status(request, refused is not None)
    return render(request, "deposits/conflicts.html", context, status=status)


@reviewer_required
@require_GET
def conflicts(request: HttpRequest) -> HttpResponse:
    """The queue page, with a Resolve refused without JavaScript shown again once."""
    owner, number = QueueFilter(request.GET).queue()
    refused = refused_form(request, "queue", QueueResolveForm)
    if refused is None:
        return _queue(request, owner, number)
    user_id, bag_id, form = refused
    return _queue(request, owner, number, refused=(queue_item(user_id=user_id, bag_id=bag_id), form))


@reviewer_required
@require_POST
@owner_view
def queue_resolve(request: HttpRequest, user_id: str, bag_id: str) -> HttpResponse:
    """Resolve from the queue: the queue again, without the bag (htmx: in place)."""
    bag_id = checked_bag_id(user_id, bag_id)
    form = QueueResolveForm(request.POST)
    owner, number = form.queue()
    if resolve(request, user_id, bag_id, form):
        if request.htmx:
            return _queue(request, owner, number)
        return redirect(_queue_url(owner, number))
    item = queue_item(user_id=user_id, bag_id=bag_id)  # a bag never in conflict is not found
    if not request.htmx:
        return refused_redirect(request, "queue", user_id, bag_id, form, _queue_url(owner, number))
    (entry,) = queue_entries([item], reviewer=reviewer_of(request), refused=(item, form))
    context = {"entry": entry, "owner": owner, "number": number, "here": _queue_url(owner, number)}
    response = render(request, "deposits/conflicts.html#item", context)
    return reswap(retarget(response, f"#item-{bag_id}"), "outerHTML")


__all__ = ["QueueEntry", "conflicts", "queue_entries", "queue_resolve"]

"""The reviewers' deposit pages: the conflict queue, a bag, a deposit, the recall playground.

Each view checks access, parses, calls one service or selector and renders. A page's swappable
parts are `{% partialdef %}` blocks of its own template, rendered alone when `request.htmx`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.text import Truncator
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import push_url, reswap, retarget

from atlaso_site.access.roles import OPERATOR, require_role, reviewer_required
from atlaso_site.lib.errors import NOT_FOUND, AtlasoError
from atlaso_site.lib.paging import Page
from atlaso_site.ui.pages import NO_OWNER, Pager, flash, offset_of, owner_view, template_for
from deposits.domain.bags import BAG_ID_PATTERN, BagStats
from deposits.domain.bags import bag_id as bag_id_of
from deposits.domain.recall import MAX_LIMIT
from deposits.domain.types import DIRECTIONAL, POLARITIES
from deposits.domain.types import Deposit as DepositRecord
from deposits.forms import (
    DEFAULT_RECALL_LIMIT,
    QUEUE_PAGE_SIZE,
    EraseForm,
    QueueFilter,
    QueueResolveForm,
    ReasonForm,
    RecallForm,
    ResolveForm,
    RetractForm,
)
from deposits.selectors.bags import QueueItem, bag_detail, conflict_queue, queue_item
from deposits.selectors.deposits import Edge, channel_tiers, deposit_detail, edges_touching, owner_exists
from deposits.selectors.recall import SearchResults, recall
from deposits.selectors.review import (
    Claim,
    ResolutionRecord,
    bag_resolutions,
    claim_on,
    claims_on,
    resolution,
)
from deposits.services.deposits import AddResult, deposit_retract
from deposits.services.review import bag_resolve

logger = logging.getLogger(__name__)


# ---- What the templates show: records joined with what a template cannot look up ----------


@dataclass(frozen=True, slots=True)
class Row:
    """A deposit as a page lists it: with its channel's tier and the edges that name it."""

    deposit: DepositRecord
    tier: str | None
    contradicts: tuple[Edge, ...] = ()  # edges out: what this deposit supersedes
    superseded_by: tuple[Edge, ...] = ()  # edges in

    @property
    def keepable(self) -> bool:
        """A live directional deposit: what Resolve offers to keep."""
        return self.deposit.is_live and self.deposit.polarity in DIRECTIONAL

    @property
    def superseders(self) -> tuple[Edge, ...]:
        """The edges in that still supersede it (an undone resolution's no longer does)."""
        return tuple(edge for edge in self.superseded_by if edge.superseding)


@dataclass(frozen=True, slots=True)
class Group:
    """The deposits of one polarity: a column of the queue item, a table of the bag page."""

    polarity: str
    live: int
    rows: tuple[Row, ...]

    @property
    def superseded(self) -> int:
        return sum(1 for row in self.rows if row.deposit.state == "superseded")


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
        """In conflict, nobody else on it, and every live directional deposit shown: none is
        superseded unseen."""
        return self.item.bag.has_disagreement and self.item.more == 0 and not self.held_by_other


def _rows(records: Iterable[DepositRecord], edges: Sequence[Edge] = ()) -> list[Row]:
    records = list(records)
    tiers = channel_tiers(record.channel for record in records)
    return [
        Row(
            deposit=record,
            tier=tiers.get(record.channel or ""),
            contradicts=tuple(edge for edge in edges if edge.new.id == record.id),
            superseded_by=tuple(edge for edge in edges if edge.old.id == record.id),
        )
        for record in records
    ]


def _groups(rows: Iterable[Row], counts: BagStats, polarities: Sequence[str]) -> tuple[Group, ...]:
    """The rows by polarity, in the order given; a polarity with neither rows nor live deposits is left out."""
    rows = list(rows)
    groups = (
        Group(
            polarity, counts.count(polarity), tuple(row for row in rows if row.deposit.polarity == polarity)
        )
        for polarity in polarities
    )
    return tuple(group for group in groups if group.rows or group.live)


def _form_status(request: HttpRequest, failed: bool) -> int:
    """422 for a whole page answering a POST with a form's error; htmx swaps only 2xx
    (templates/base.html), and a page a refused Resolve redirected to (a GET) is a 200."""
    return 422 if failed and not request.htmx and request.method == "POST" else 200


def _bag_id(user_id: str, bag_id: str) -> str:
    if BAG_ID_PATTERN.fullmatch(bag_id) is None:
        raise AtlasoError(NOT_FOUND, f"no bag {bag_id!r} for user {user_id!r}")
    return bag_id


# ---- Resolve (the queue and the bag page share it) ----------------------------------------


def _resolve(request: HttpRequest, user_id: str, bag_id: str, form: ResolveForm) -> bool:
    """Run the resolution the form asks for; False, with the refusal on the form, when it failed."""
    form.is_valid()  # the form refuses nothing itself: the service judges what was sent
    try:
        result = bag_resolve(
            user_id=user_id,
            bag_id=bag_id,
            keep=sorted(form.kept),
            side=form.cleaned_data["side"] or None,
            reason=form.cleaned_data["reason"],
            holds=form.cleaned_data["holds"],
            reviewer=request.user.get_username(),
        )
    except AtlasoError as error:
        if error.code == NOT_FOUND:
            raise
        form.refuse(error)
        return False
    flash(request, _resolved_message(user_id, result))
    request.session[LAST_RESOLUTION] = {"user_id": user_id, "deposit_id": result.deposit.id}
    return True


LAST_RESOLUTION = "atlaso.last_resolution"
REFUSED = "atlaso.refused_resolution"
KEPT_FIELDS = ("keep", "reason", "holds", "owner", "page")


def refused_redirect(
    request: HttpRequest, where: str, user_id: str, bag_id: str, form: ResolveForm, to: str
) -> HttpResponse:
    """Without JavaScript a refused Resolve redirects back to its page (so a reload never posts
    again), which shows the refusal once, with what was sent (`refused_form`)."""
    request.session[REFUSED] = {
        "where": where,
        "user_id": user_id,
        "bag_id": bag_id,
        "data": {name: form.data.getlist(name) for name in KEPT_FIELDS if name in form.data},
        "field": form.error_field,
        "message": form.error_message,
    }
    return redirect(to)


def refused_form[F: ResolveForm](
    request: HttpRequest, where: str, form_class: type[F]
) -> tuple[str, str, F] | None:
    """The refused Resolve this page is to show again, once: (user_id, bag_id, its form with the refusal)."""
    stored = request.session.get(REFUSED)
    if not isinstance(stored, dict) or stored.get("where") != where:
        return None
    del request.session[REFUSED]
    data = QueryDict(mutable=True)
    for name, values in stored["data"].items():
        data.setlist(name, [str(value) for value in values])
    form = form_class(data)
    form.is_valid()
    field = stored.get("field")
    form.add_error(field if field in form.fields else None, str(stored.get("message") or "refused"))
    return str(stored["user_id"]), str(stored["bag_id"]), form


def last_resolution(request: HttpRequest) -> ResolutionRecord | None:
    """The reviewer's last resolution while it stands: the confirmation that offers its Undo
    (and `u`). It stays through Skip and every other page until it is undone (or erased), or
    the reviewer resolves another, so `u` always means the last one, not the last page's."""
    last = request.session.get(LAST_RESOLUTION)
    if not isinstance(last, dict):
        return None
    try:
        record = resolution(user_id=str(last.get("user_id")), deposit_id=str(last.get("deposit_id")))
    except AtlasoError:  # erased meanwhile
        record = None
    if record is None or record.undone:
        del request.session[LAST_RESOLUTION]
        return None
    return record


def _resolved_message(user_id: str, result: AddResult) -> str:
    written = result.deposit
    scope = " ".join(f"{n}={v}" for n, v in written.scope.facets_dict().items() if v is not None)
    superseded = len(written.contradicts)
    holds = Truncator(" ".join(written.content.split())).chars(160)
    return (
        f"Resolved {user_id}’s bag ({scope or 'no facets'}): wrote {written.polarity} deposit "
        f"{written.id} on human_review ({written.evidence_grade}), superseding {superseded} "
        f"deposit{'' if superseded == 1 else 's'}. What holds now: “{holds}”."
    )


# ---- The conflict queue --------------------------------------------------------------------


def _queue_url(owner: str, number: int) -> str:
    query = {key: value for key, value in (("owner", owner), ("page", number)) if value and value != 1}
    return reverse("deposits:conflicts") + (f"?{urlencode(query)}" if query else "")


def _queue_entry(request: HttpRequest, item: QueueItem, form: ResolveForm) -> QueueEntry:
    claim = claim_on(item.bag.bag_id)
    return QueueEntry(
        item=item,
        sides=_groups(_rows(item.deposits), item.bag.stats, DIRECTIONAL),
        form=form,
        claim=claim,
        held_by_other=claim is not None and claim.held_by_other(request.user.get_username()),
    )


def _queue_entries(
    request: HttpRequest, items: Sequence[QueueItem], failed: QueueEntry | None
) -> list[QueueEntry]:
    """Each item with its tiers and claim (one query each for the page); a failed resolution
    shown in its place."""
    tiers = channel_tiers(d.channel for item in items for d in item.deposits)
    claims = claims_on(item.bag.bag_id for item in items)
    reviewer = request.user.get_username()
    entries = []
    for item in items:
        if failed is not None and item.bag.bag_id == failed.item.bag.bag_id:
            entries.append(failed)
            failed = None
            continue
        rows = [Row(deposit=d, tier=tiers.get(d.channel or "")) for d in item.deposits]
        claim = claims.get(item.bag.bag_id)
        entries.append(
            QueueEntry(
                item=item,
                sides=_groups(rows, item.bag.stats, DIRECTIONAL),
                claim=claim,
                held_by_other=claim is not None and claim.held_by_other(reviewer),
            )
        )
    if failed is not None:  # it left the queue meanwhile: shown first, with what was sent
        entries.insert(0, failed)
    return entries


def _queue_page(owner: str, number: int) -> Page[QueueItem]:
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


def _queue(request: HttpRequest, owner: str, number: int, failed: QueueEntry | None = None) -> HttpResponse:
    """The queue page (htmx: its list alone); `failed` is a resolution to show again with its error."""
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
        "entries": _queue_entries(request, page.items, failed),
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
    return render(
        request, "deposits/conflicts.html", context, status=_form_status(request, failed is not None)
    )


@reviewer_required
@require_GET
def conflicts(request: HttpRequest) -> HttpResponse:
    owner, number = QueueFilter(request.GET).queue()
    refused = refused_form(request, "queue", QueueResolveForm)
    if refused is not None:
        user_id, bag_id, form = refused
        failed = _queue_entry(request, queue_item(user_id=user_id, bag_id=bag_id), form)
        return _queue(request, owner, number, failed=failed)
    return _queue(request, owner, number)


@reviewer_required
@require_POST
@owner_view
def queue_resolve(request: HttpRequest, user_id: str, bag_id: str) -> HttpResponse:
    """Resolve from the queue: the queue again, without the bag (htmx: in place)."""
    bag_id = _bag_id(user_id, bag_id)
    form = QueueResolveForm(request.POST)
    owner, number = form.queue()
    if _resolve(request, user_id, bag_id, form):
        if request.htmx:
            return _queue(request, owner, number)
        return redirect(_queue_url(owner, number))
    failed = _queue_entry(request, queue_item(user_id=user_id, bag_id=bag_id), form)
    if request.htmx:
        context = {"entry": failed, "owner": owner, "number": number, "here": _queue_url(owner, number)}
        response = render(request, "deposits/conflicts.html#item", context)
        return reswap(retarget(response, f"#item-{bag_id}"), "outerHTML")
    return refused_redirect(request, "queue", user_id, bag_id, form, _queue_url(owner, number))


# ---- The bag page --------------------------------------------------------------------------


def _bag(request: HttpRequest, user_id: str, bag_id: str, form: ResolveForm | None = None) -> HttpResponse:
    """The bag page (htmx: the bag alone); `form` a refused resolution to show again with its error."""
    bag = bag_detail(user_id=user_id, bag_id=_bag_id(user_id, bag_id))
    edges = edges_touching(user_id=user_id, deposit_ids=[d.id for d in bag.deposits])
    groups = _groups(_rows(bag.deposits, edges), bag.stats, POLARITIES)
    claim = claim_on(bag.bag_id) if bag.has_disagreement else None
    held_by_other = claim is not None and claim.held_by_other(request.user.get_username())
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
    return render(request, template, context, status=_form_status(request, form is not None))


@reviewer_required
@require_GET
@owner_view
def bag(request: HttpRequest, user_id: str, bag_id: str) -> HttpResponse:
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
    if not _resolve(request, user_id, _bag_id(user_id, bag_id), form):
        if request.htmx:
            return _bag(request, user_id, bag_id, form)
        to = reverse("deposits:bag", args=[user_id, bag_id])
        return refused_redirect(request, "bag", user_id, bag_id, form, to)
    if not request.htmx:
        return redirect("deposits:bag", user_id=user_id, bag_id=bag_id)
    return _bag(request, user_id, bag_id)


# ---- The deposit page ----------------------------------------------------------------------


def _deposit(
    request: HttpRequest, user_id: str, deposit_id: str, failed: ReasonForm | None = None
) -> HttpResponse:
    """The deposit page; `failed` a Retract or Erase sent without a reason, to show with its error."""
    record = deposit_detail(user_id, deposit_id)
    edges = edges_touching(user_id=user_id, deposit_ids=[record.id])
    (row,) = _rows([record], edges)
    context = {
        "row": row,
        "deposit": record,
        "bag_id": bag_id_of(user_id, record.scope),
        "retract_form": failed if isinstance(failed, RetractForm) else RetractForm(),
        "erase_form": failed if isinstance(failed, EraseForm) else EraseForm(),
    }
    return render(request, "deposits/deposit.html", context, status=_form_status(request, failed is not None))


@reviewer_required
@require_GET
@owner_view
def deposit(request: HttpRequest, user_id: str, deposit_id: str) -> HttpResponse:
    return _deposit(request, user_id, deposit_id)


@reviewer_required
@require_POST
@owner_view
def deposit_retract_view(request: HttpRequest, user_id: str, deposit_id: str) -> HttpResponse:
    """Soft-retract: kept for audit, no longer counted; back to the deposit page."""
    form = RetractForm(request.POST)
    if not form.is_valid():
        deposit_detail(user_id, deposit_id)  # an unknown deposit is a 404 before a form error
        return _deposit(request, user_id, deposit_id, form)
    reason = form.cleaned_data["reason"]
    result = deposit_retract(user_id=user_id, deposit_id=deposit_id, mode="soft", reason=reason)
    flash(request, f"Retracted deposit {result.deposit_id}: it no longer counts in its bag or recall.")
    return redirect("deposits:deposit", user_id=user_id, deposit_id=result.deposit_id)


@reviewer_required
@require_POST
@owner_view
def deposit_erase_view(request: HttpRequest, user_id: str, deposit_id: str) -> HttpResponse:
    """Hard erase (operators only): the row, its index entry and edges go; to the owner page."""
    require_role(request, OPERATOR)
    form = EraseForm(request.POST)
    if not form.is_valid():
        deposit_detail(user_id, deposit_id)
        return _deposit(request, user_id, deposit_id, form)
    reason = form.cleaned_data["reason"]
    deposit_retract(user_id=user_id, deposit_id=deposit_id, mode="hard", reason=reason)
    # The row is gone, and with it any place to keep the reason: the log is the record of who and why.
    logger.info("deposit %s of %s erased by %s: %r", deposit_id, user_id, request.user.get_username(), reason)
    flash(request, f"Erased deposit {deposit_id} of {user_id}: it and its edges are gone.")
    return redirect("diagnostics:owner", user_id=user_id)


# ---- The recall playground -----------------------------------------------------------------


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


__all__ = [
    "bag",
    "bag_resolve_view",
    "conflicts",
    "deposit",
    "deposit_erase_view",
    "deposit_retract_view",
    "queue_resolve",
    "recall_playground",
]

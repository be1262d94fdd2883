"""The reviewers' deposit pages: the conflict queue, a bag, a deposit, the recall playground.

Each view checks access, parses, calls one service or selector and renders. A page's swappable
parts are `{% partialdef %}` blocks of its own template, rendered alone when `request.htmx`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import wraps
from math import ceil
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import push_url, reswap, retarget

from atlaso_site.access.roles import OPERATOR, require_role, reviewer_required
from atlaso_site.lib.errors import NOT_FOUND, AtlasoError
from atlaso_site.lib.user_ids import is_user_id
from deposits.domain.bags import BAG_ID_PATTERN, BagStats
from deposits.domain.bags import bag_id as bag_id_of
from deposits.domain.recall import MAX_LIMIT
from deposits.domain.types import DIRECTIONAL, FACETS, INT_FACETS, POLARITIES
from deposits.domain.types import Deposit as DepositRecord
from deposits.selectors.bags import QueueItem, bag_detail, conflict_queue, queue_item
from deposits.selectors.deposits import Edge, channel_tiers, deposit_detail, edges_touching, owner_exists
from deposits.selectors.recall import SearchResults, recall
from deposits.services.deposits import AddResult, bag_resolve, deposit_retract

logger = logging.getLogger(__name__)

QUEUE_PAGE_SIZE = 20
DEFAULT_RECALL_LIMIT = 10

type View = Callable[..., HttpResponse]


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
        return self.deposit.state == "live" and self.deposit.polarity in DIRECTIONAL


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
class ResolveForm:
    """What a reviewer sent to Resolve, kept to show it again beside the error."""

    keep: frozenset[str] = frozenset()
    reason: str = ""
    error: AtlasoError | None = None

    @property
    def error_field(self) -> str | None:
        return self.error.details.get("field") if self.error else None


@dataclass(frozen=True, slots=True)
class QueueEntry:
    """A queue item as shown: its sides with tiers, and the Resolve form (refilled after an error)."""

    item: QueueItem
    sides: tuple[Group, ...]
    form: ResolveForm = ResolveForm()

    @property
    def resolvable_here(self) -> bool:
        """In conflict and every live directional deposit shown: none is superseded unseen."""
        return self.item.bag.has_disagreement and self.item.more == 0


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


def _form_status(request: HttpRequest, failed: object | None) -> int:
    """422 for a whole page re-shown with a form's error; htmx swaps only 2xx (templates/base.html)."""
    return 422 if failed is not None and not request.htmx else 200


def _text(value: str | None) -> str:
    # PostgreSQL refuses NUL in text; no stored value holds one, so dropping it changes no meaning.
    return (value or "").replace("\x00", "")


# ---- Not found -----------------------------------------------------------------------------


def _not_found(request: HttpRequest, message: str) -> HttpResponse:
    return render(request, "deposits/not_found.html", {"message": message}, status=404)


def owner_view(view: View) -> View:
    """An owner's page: a user_id that breaks the rule, or anything not found, is a 404 in the frame."""

    @wraps(view)
    def checked(request: HttpRequest, user_id: str, *args: Any, **kwargs: Any) -> HttpResponse:
        if not is_user_id(user_id):
            return _not_found(request, "No memory owner has this id.")
        try:
            return view(request, user_id, *args, **kwargs)
        except AtlasoError as error:
            if error.code != NOT_FOUND:
                raise
            return _not_found(request, error.message)

    return checked


def _bag_id(user_id: str, bag_id: str) -> str:
    if BAG_ID_PATTERN.fullmatch(bag_id) is None:
        raise AtlasoError(NOT_FOUND, f"no bag {bag_id!r} for user {user_id!r}")
    return bag_id


# ---- Resolve (the queue and the bag page share it) ----------------------------------------


def _resolve(request: HttpRequest, user_id: str, bag_id: str) -> ResolveForm:
    """Run the resolution the form asks for; the form back, with the error when it failed."""
    form = ResolveForm(keep=frozenset(request.POST.getlist("keep")), reason=_text(request.POST.get("reason")))
    try:
        result = bag_resolve(
            user_id=user_id,
            bag_id=bag_id,
            keep=sorted(form.keep),
            reason=form.reason,
            reviewer=request.user.get_username(),
        )
    except AtlasoError as error:
        if error.code == NOT_FOUND:
            raise
        return ResolveForm(keep=form.keep, reason=form.reason, error=error)
    messages.success(request, _resolved_message(user_id, result))
    return form


def _resolved_message(user_id: str, result: AddResult) -> str:
    written = result.deposit
    scope = " ".join(f"{n}={v}" for n, v in written.scope.facets_dict().items() if v is not None)
    superseded = len(written.contradicts)
    return (
        f"Resolved {user_id}’s bag ({scope or 'no facets'}): wrote {written.polarity} deposit "
        f"{written.id} on human_review ({written.evidence_grade}), superseding {superseded} "
        f"deposit{'' if superseded == 1 else 's'}."
    )


# ---- The conflict queue --------------------------------------------------------------------


def _queue_params(params: QueryDict) -> tuple[str, int]:
    owner = _text(params.get("owner")).strip()[:128]
    raw = params.get("page", "")
    number = int(raw) if raw.isdigit() and 0 < int(raw) < 10**6 else 1
    return owner, number


def _queue_url(owner: str, number: int) -> str:
    query = {key: value for key, value in (("owner", owner), ("page", number)) if value and value != 1}
    return reverse("deposits:conflicts") + (f"?{urlencode(query)}" if query else "")


def _queue_entry(item: QueueItem, form: ResolveForm = ResolveForm()) -> QueueEntry:
    return QueueEntry(item=item, sides=_groups(_rows(item.deposits), item.bag.stats, DIRECTIONAL), form=form)


def _queue_entries(items: Sequence[QueueItem], failed: QueueEntry | None) -> list[QueueEntry]:
    """Each item with its tiers (one query for the page); a failed resolution shown in its place."""
    tiers = channel_tiers(d.channel for item in items for d in item.deposits)
    entries = []
    for item in items:
        if failed is not None and item.bag.bag_id == failed.item.bag.bag_id:
            entries.append(failed)
            failed = None
            continue
        rows = [Row(deposit=d, tier=tiers.get(d.channel or "")) for d in item.deposits]
        entries.append(QueueEntry(item=item, sides=_groups(rows, item.bag.stats, DIRECTIONAL)))
    if failed is not None:  # it left the queue meanwhile: shown first, with what was sent
        entries.insert(0, failed)
    return entries


def _queue(request: HttpRequest, owner: str, number: int, failed: QueueEntry | None = None) -> HttpResponse:
    """The queue page (htmx: its list alone); `failed` is a resolution to show again with its error."""
    page = conflict_queue(owner_prefix=owner, limit=QUEUE_PAGE_SIZE, offset=(number - 1) * QUEUE_PAGE_SIZE)
    pages = max(1, ceil(page.total / QUEUE_PAGE_SIZE))
    asked = number
    if number > pages:  # past the end (the last item of the last page was resolved): the last page
        number = pages
        page = conflict_queue(
            owner_prefix=owner, limit=QUEUE_PAGE_SIZE, offset=(number - 1) * QUEUE_PAGE_SIZE
        )
    if number != asked and request.method == "GET" and not request.htmx:
        return redirect(_queue_url(owner, number))
    context = {
        "page": page,
        "entries": _queue_entries(page.items, failed),
        "owner": owner,
        "number": number,
        "pages": pages,
        "first": page.offset + 1,
        "last": page.offset + len(page.items),
        "previous_url": _queue_url(owner, number - 1) if number > 1 else None,
        "next_url": _queue_url(owner, number + 1) if page.has_next else None,
    }
    if request.htmx:
        response = render(request, "deposits/conflicts.html#queue", context)
        if number != asked:
            push_url(response, _queue_url(owner, number))
        return response
    return render(request, "deposits/conflicts.html", context, status=_form_status(request, failed))


@reviewer_required
@require_GET
def conflicts(request: HttpRequest) -> HttpResponse:
    owner, number = _queue_params(request.GET)
    return _queue(request, owner, number)


@reviewer_required
@require_POST
@owner_view
def queue_resolve(request: HttpRequest, user_id: str, bag_id: str) -> HttpResponse:
    """Resolve from the queue: the queue again, without the bag (htmx: in place)."""
    bag_id = _bag_id(user_id, bag_id)
    owner, number = _queue_params(request.POST)
    form = _resolve(request, user_id, bag_id)
    if form.error is None:
        if request.htmx:
            return _queue(request, owner, number)
        return redirect(_queue_url(owner, number))
    failed = _queue_entry(queue_item(user_id=user_id, bag_id=bag_id), form)
    if request.htmx:
        context = {"entry": failed, "owner": owner, "number": number}
        response = render(request, "deposits/conflicts.html#item", context)
        return reswap(retarget(response, f"#item-{bag_id}"), "outerHTML")
    return _queue(request, owner, number, failed=failed)


# ---- The bag page --------------------------------------------------------------------------


def _bag(request: HttpRequest, user_id: str, bag_id: str, form: ResolveForm = ResolveForm()) -> HttpResponse:
    bag = bag_detail(user_id=user_id, bag_id=_bag_id(user_id, bag_id))
    edges = edges_touching(user_id=user_id, deposit_ids=[d.id for d in bag.deposits])
    rows = _rows(bag.deposits, edges)
    context = {
        "bag": bag,
        "groups": _groups(rows, bag.stats, POLARITIES),
        "edges": edges,
        "superseded": sum(1 for d in bag.deposits if d.state == "superseded"),
        "form": form,
    }
    template = "deposits/bag.html#bag" if request.htmx else "deposits/bag.html"
    return render(request, template, context, status=_form_status(request, form.error))


@reviewer_required
@require_GET
@owner_view
def bag(request: HttpRequest, user_id: str, bag_id: str) -> HttpResponse:
    return _bag(request, user_id, bag_id)


@reviewer_required
@require_POST
@owner_view
def bag_resolve_view(request: HttpRequest, user_id: str, bag_id: str) -> HttpResponse:
    """Resolve on the bag page: the bag page again, showing it resolved (htmx: in place)."""
    form = _resolve(request, user_id, _bag_id(user_id, bag_id))
    if form.error is None and not request.htmx:
        return redirect("deposits:bag", user_id=user_id, bag_id=bag_id)
    return _bag(request, user_id, bag_id, form if form.error else ResolveForm())


# ---- The deposit page ----------------------------------------------------------------------


def _deposit(
    request: HttpRequest, user_id: str, deposit_id: str, errors: Mapping[str, str] | None = None
) -> HttpResponse:
    record = deposit_detail(user_id, deposit_id)
    edges = edges_touching(user_id=user_id, deposit_ids=[record.id])
    (row,) = _rows([record], edges)
    context = {
        "row": row,
        "deposit": record,
        "bag_id": bag_id_of(user_id, record.scope),
        "errors": errors or {},
        "reason": _text(request.POST.get("reason")) if errors else "",
    }
    return render(request, "deposits/deposit.html", context, status=_form_status(request, errors))


@reviewer_required
@require_GET
@owner_view
def deposit(request: HttpRequest, user_id: str, deposit_id: str) -> HttpResponse:
    return _deposit(request, user_id, deposit_id)


def _reason(request: HttpRequest) -> str:
    return _text(request.POST.get("reason")).strip()


@reviewer_required
@require_POST
@owner_view
def deposit_retract_view(request: HttpRequest, user_id: str, deposit_id: str) -> HttpResponse:
    """Soft-retract: kept for audit, no longer counted; back to the deposit page."""
    reason = _reason(request)
    if not reason:
        deposit_detail(user_id, deposit_id)  # an unknown deposit is a 404 before a form error
        return _deposit(request, user_id, deposit_id, {"retract": "Say why this deposit is retracted."})
    result = deposit_retract(user_id=user_id, deposit_id=deposit_id, mode="soft", reason=reason)
    messages.success(
        request, f"Retracted deposit {result.deposit_id}: it no longer counts in its bag or recall."
    )
    return redirect("deposits:deposit", user_id=user_id, deposit_id=result.deposit_id)


@reviewer_required
@require_POST
@owner_view
def deposit_erase_view(request: HttpRequest, user_id: str, deposit_id: str) -> HttpResponse:
    """Hard erase (operators only): the row, its index entry and edges go; to the owner page."""
    require_role(request, OPERATOR)
    reason = _reason(request)
    if not reason:
        deposit_detail(user_id, deposit_id)
        return _deposit(request, user_id, deposit_id, {"erase": "Say why this deposit is erased."})
    deposit_retract(user_id=user_id, deposit_id=deposit_id, mode="hard", reason=reason)
    # The row is gone, and with it any place to keep the reason: the log is the record of who and why.
    logger.info("deposit %s of %s erased by %s: %r", deposit_id, user_id, request.user.get_username(), reason)
    messages.success(request, f"Erased deposit {deposit_id} of {user_id}: it and its edges are gone.")
    return redirect(f"/owners/{user_id}/")


# ---- The recall playground -----------------------------------------------------------------


@dataclass
class RecallForm:
    """The playground's query as typed, and an error per field."""

    q: str = ""
    limit: str = str(DEFAULT_RECALL_LIMIT)
    facets: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def facet_fields(self) -> list[dict[str, Any]]:
        return [
            {"name": name, "value": value, "numeric": name in INT_FACETS, "error": self.errors.get(name)}
            for name, value in self.facets.items()
        ]

    @property
    def scoped(self) -> bool:
        return any(self.facets.values())


def _recall_form(params: QueryDict) -> tuple[RecallForm, dict[str, Any], int]:
    """The form as typed, plus the facets and limit parsed; a field that does not parse is an error."""
    form = RecallForm(
        q=_text(params.get("q")),
        limit=_text(params.get("limit", str(DEFAULT_RECALL_LIMIT))).strip() or str(DEFAULT_RECALL_LIMIT),
        facets={name: _text(params.get(name)).strip() for name in FACETS},
    )
    facets: dict[str, Any] = {}
    for name, text in form.facets.items():
        if not text:
            continue
        if name in INT_FACETS:
            try:
                facets[name] = int(text)
            except ValueError:
                form.errors[name] = f"{name} must be a whole number, or left empty"
        else:
            facets[name] = text
    limit = DEFAULT_RECALL_LIMIT
    try:
        limit = int(form.limit)
    except ValueError:
        form.errors["limit"] = f"limit must be a whole number from 1 to {MAX_LIMIT}"
    return form, facets, limit


@reviewer_required
@require_GET
@owner_view
def recall_playground(request: HttpRequest, user_id: str) -> HttpResponse:
    """What an agent's `GET /recall` answers, without counting toward Coverage (no RecallLog)."""
    if not owner_exists(user_id):
        return _not_found(request, f"Nothing was ever deposited for {user_id!r}.")
    form, facets, limit = _recall_form(request.GET)
    results: SearchResults | None = None
    if "q" in request.GET and not form.errors:
        try:
            results = recall(user_id=user_id, query=form.q, facets=facets, limit=limit)
        except AtlasoError as error:
            name = str(error.details.get("field", "q")).removeprefix("scope.")
            form.errors[name if name in {"q", "limit", *FACETS} else "q"] = error.message
    context = {"user_id": user_id, "form": form, "asked": "q" in request.GET, "max_limit": MAX_LIMIT}
    if results is not None:
        context |= _results_context(user_id, results, facets)
    if not request.htmx:
        return render(request, "deposits/recall.html", context)
    response = render(request, "deposits/recall.html#playground", context)
    return push_url(response, _recall_url(user_id, form))


def _results_context(user_id: str, results: SearchResults, facets: Mapping[str, Any]) -> dict[str, Any]:
    """The hits with their channels' tiers, and how many conflict bags lie beyond the limit."""
    tiers = channel_tiers(hit.deposit.channel for hit in results)
    shown = {hit.bag_id for hit in results if hit.has_disagreement}
    return {
        "results": results,
        "hits": [(hit, tiers.get(hit.deposit.channel or "")) for hit in results],
        "conflict_bags_shown": len(shown),
        # The aggregate flags count every matching bag; the hits stop at the limit.
        "conflict_bags_beyond": results.conflict_bag_count - len(shown),
        "beyond_url": f"/owners/{user_id}/?" + urlencode({"conflict": 1, **facets}),
    }


def _recall_url(user_id: str, form: RecallForm) -> str:
    """The playground's address for this query: the form sends every field, the link keeps those given."""
    given = {"q": form.q, "limit": form.limit, **form.facets}
    default = ("limit", str(DEFAULT_RECALL_LIMIT))
    query = {name: v for name, v in given.items() if name == "q" or (v and (name, v) != default)}
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

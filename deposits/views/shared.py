"""What the review pages share: rows and groups of deposits, Resolve, its refusals, the last resolution.

Each view checks access, parses, calls one service or selector and renders. A page's swappable
parts are `{% partialdef %}` blocks of its own template, rendered alone when `request.htmx`.
Every page module imports what it shares from here, never from another page's module.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect
from django.utils.text import Truncator

from atlaso_site.lib.errors import NOT_FOUND, AtlasoError
from atlaso_site.ui.pages import flash
from deposits.domain.bags import BAG_ID_PATTERN, BagStats
from deposits.domain.types import DIRECTIONAL
from deposits.domain.types import Deposit as DepositRecord
from deposits.forms import ResolveForm
from deposits.selectors.deposits import Edge, channel_tiers
from deposits.selectors.review import ResolutionRecord, resolution
from deposits.services.deposits import AddResult
from deposits.services.review import bag_resolve

LAST_RESOLUTION = "atlaso.last_resolution"
REFUSED = "atlaso.refused_resolution"
KEPT_FIELDS = ("keep", "reason", "holds", "owner", "page")


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
    """The deposits of one polarity: a side of a conflict, a table of the bag page."""

    polarity: str
    live: int
    rows: tuple[Row, ...]

    @property
    def superseded(self) -> int:
        """How many of its rows are superseded deposits."""
        return sum(1 for row in self.rows if row.deposit.state == "superseded")


def deposit_rows(
    records: Iterable[DepositRecord],
    *,
    edges: Sequence[Edge] = (),
    tiers: Mapping[str, str] | None = None,
) -> list[Row]:
    """The records as rows, each with its tier (read in one query unless given) and its edges."""
    records = list(records)
    if tiers is None:
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


def polarity_groups(rows: Iterable[Row], counts: BagStats, polarities: Sequence[str]) -> tuple[Group, ...]:
    """The rows by polarity, in the order given, leaving out a polarity with no rows and no live deposit."""
    listed = list(rows)
    every = (
        Group(
            polarity, counts.count(polarity), tuple(row for row in listed if row.deposit.polarity == polarity)
        )
        for polarity in polarities
    )
    return tuple(group for group in every if group.rows or group.live)


def conflict_sides(
    records: Iterable[DepositRecord], counts: BagStats, *, tiers: Mapping[str, str] | None = None
) -> tuple[Group, ...]:
    """A conflict's sides: its directional deposits by polarity, positive, negative, cautionary."""
    return polarity_groups(deposit_rows(records, tiers=tiers), counts, DIRECTIONAL)


def form_status(request: HttpRequest, failed: bool) -> int:
    """The status of a page that shows a form's error: 422 for a whole page answering a POST.

    htmx swaps only 2xx (templates/base.html), and a page a refused Resolve redirected to (a GET)
    is a 200.
    """
    return 422 if failed and not request.htmx and request.method == "POST" else 200


def checked_bag_id(user_id: str, bag_id: str) -> str:
    """The bag id from a path, or a not-found error when it cannot name a bag."""
    if BAG_ID_PATTERN.fullmatch(bag_id) is None:
        raise AtlasoError(NOT_FOUND, f"no bag {bag_id!r} for user {user_id!r}")
    return bag_id


def reviewer_of(request: HttpRequest) -> str:
    """The login acting: the reviewer a claim, a skip or a resolution is recorded for."""
    return request.user.get_username()


# ---- Resolve (the queue, the bag page and the desk share it) --------------------------------


def resolve(request: HttpRequest, user_id: str, bag_id: str, form: ResolveForm) -> bool:
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
            reviewer=reviewer_of(request),
        )
    except AtlasoError as error:
        if error.code == NOT_FOUND:
            raise
        form.refuse(error)
        return False
    flash(request, _resolved_message(user_id, result))
    request.session[LAST_RESOLUTION] = {"user_id": user_id, "deposit_id": result.deposit.id}
    return True


def _resolved_message(user_id: str, result: AddResult) -> str:
    """What the flash says of a resolution: the bag, the deposit written, what it superseded and holds."""
    written = result.deposit
    scope = " ".join(f"{n}={v}" for n, v in written.scope.facets_dict().items() if v is not None)
    superseded = len(written.contradicts)
    holds = Truncator(" ".join(written.content.split())).chars(160)
    return (
        f"Resolved {user_id}’s bag ({scope or 'no facets'}): wrote {written.polarity} deposit "
        f"{written.id} on human_review ({written.evidence_grade}), superseding {superseded} "
        f"deposit{'' if superseded == 1 else 's'}. What holds now: “{holds}”."
    )


def refused_redirect(
    request: HttpRequest, where: str, user_id: str, bag_id: str, form: ResolveForm, to: str
) -> HttpResponse:
    """Redirect a refused Resolve back to its page, keeping the refusal to show there once.

    Without JavaScript the redirect means a reload never posts again; the page shows the refusal
    with what was sent (`refused_form`).
    """
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
    """The reviewer's last resolution while it stands: the confirmation that offers its Undo (and `u`).

    It stays through Skip and every other page until it is undone (or erased), or the reviewer
    resolves another, so `u` always means the last one, not the last page's.
    """
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

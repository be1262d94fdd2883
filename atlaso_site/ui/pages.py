"""What every dashboard page does the same way, from paging its list to showing a flash message.

Read its page number, page its list, guard its owner id, say "not found", "bad request" or
"unavailable", show a flash message.

A view reads `page_number(request.GET, size=…)`, asks its selector for `offset_of(number, size)`,
and hands the `Page` it gets to `Pager.of(request, page, …)`; its template includes
`ui/pager.html`. An owner's page is wrapped in `@owner_view`; a miss anywhere below it raises
`AtlasoError(NOT_FOUND, …)` and becomes `not_found(…)`, the one 404 page in the frame. The
400 and 503 pages (`bad_request`, `unavailable`) are answered by atlaso_site.middleware for
every page and the admin, and drawn without the request: neither may need the database.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import wraps
from math import ceil
from typing import Any

import psycopg
from django.contrib import messages
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, QueryDict
from django.shortcuts import render
from django.template.loader import render_to_string

from atlaso_site.lib.errors import NOT_FOUND, AtlasoError
from atlaso_site.lib.paging import MAX_OFFSET, Page
from atlaso_site.lib.user_ids import USER_ID_RULE, is_user_id

type View = Callable[..., HttpResponse]

#: What an owner's page says when nothing was ever deposited for the id it names.
NO_OWNER = "No memory owner has this id: nothing is stored for it (never deposited, or forgotten)."
#: How long the 503 page asks a client to wait before it asks again, as the API's 503 does.
RETRY_AFTER_SECONDS = 5
#: A lost or refused database connection, whichever layer raises it: Django's wrappers, or the
#: driver's own (psycopg's OperationalError covers AdminShutdown and the pool's PoolTimeout).
DATABASE_DOWN: tuple[type[Exception], ...] = (
    OperationalError,
    InterfaceError,
    psycopg.OperationalError,
    psycopg.InterfaceError,
)


# ---- Page numbers and pagers ----------------------------------------------------------------


def page_number(query: QueryDict | Mapping[str, str], *, size: int, param: str = "page") -> int:
    """The 1-based page asked for in `param`: 1 when absent or malformed, never past the largest offset."""
    try:
        number = int(query.get(param, "1"))
    except (TypeError, ValueError):
        return 1
    return max(1, min(number, MAX_OFFSET // size + 1))


def offset_of(number: int, size: int) -> int:
    """Where page `number` of `size` rows starts, within the bound both databases accept."""
    return min((number - 1) * size, MAX_OFFSET)


@dataclass(frozen=True, slots=True)
class Pager:
    """A page of a list as its pager shows it: where it stands, its neighbours' links, its words.

    Links keep the rest of the query (filters, other lists' pages), so a shared link or a
    reload shows the same state; they go to `path`, or (no path) stay on the current page.
    """

    page: Page[Any]
    number: int
    pages: int
    first: str | None
    previous: str | None
    next: str | None
    last: str | None
    noun: str

    @classmethod
    def of(
        cls,
        request: HttpRequest,
        page: Page[Any],
        *,
        param: str = "page",
        path: str = "",
        noun: str = "",
        query: QueryDict | None = None,
        bare_first: bool = False,
    ) -> Pager:
        """The pager of `page`, its links keeping `query`.

        `query` is the request's own query by default; a view answering a POST passes the list's
        filters, which came in the form.

        `bare_first`: the link to page 1 carries no page number (the list's own address).
        """
        number = page.offset // page.limit + 1
        pages = max(1, ceil(page.total / page.limit))
        kept = request.GET if query is None else query

        def link(to: int) -> str:
            query = kept.copy()
            query.pop(param, None)
            if to > 1 or not bare_first:
                query[param] = str(to)
            return f"{path}?{query.urlencode()}" if query else (path or "?")

        return cls(
            page=page,
            number=number,
            pages=pages,
            first=link(1) if number > 2 else None,
            previous=link(number - 1) if number > 1 else None,
            next=link(number + 1) if page.has_next else None,
            last=link(pages) if number < pages - 1 else None,
            noun=noun,
        )

    @property
    def first_row(self) -> int:
        return self.page.offset + 1 if self.page.items else 0

    @property
    def last_row(self) -> int:
        return self.page.offset + len(self.page.items)

    @property
    def shown(self) -> bool:
        """Worth a pager: more than one page, or a page past the first (a way back)."""
        return self.pages > 1 or self.number > 1

    @property
    def summary(self) -> str:
        """ "21–40 · page 2 of 3 · 53 owners", or without a noun "21–40 of 53 · page 2 of 3"."""
        rows = f"{self.first_row}–{self.last_row}"
        where = f"page {self.number} of {self.pages}"
        if not self.noun:
            return f"{rows} of {self.page.total} · {where}"
        plural = "" if self.page.total == 1 else "s"
        return f"{rows} · {where} · {self.page.total} {self.noun}{plural}"


# ---- Not found and the owner guard ----------------------------------------------------------


def not_found(request: HttpRequest, message: str, *, back: str = "", back_label: str = "") -> HttpResponse:
    """The one 404 page, in the frame: what was not found, and a way back."""
    context = {"message": message, "back": back, "back_label": back_label}
    return render(request, "ui/not_found.html", context, status=404)


def owner_view(view: View) -> View:
    """An owner's page, `view(request, user_id, …)`, answering a bad or unknown owner with a 404.

    An id that breaks the rule is a 404 saying the rule; an `AtlasoError(NOT_FOUND)` raised below is
    a 404 with its message.
    """

    @wraps(view)
    def guarded(request: HttpRequest, user_id: str, *args: Any, **kwargs: Any) -> HttpResponse:
        if not is_user_id(user_id):
            return not_found(request, f"“{user_id}” is not a user_id: {USER_ID_RULE}.")
        try:
            return view(request, user_id, *args, **kwargs)
        except AtlasoError as error:
            if error.code != NOT_FOUND:
                raise
            return not_found(request, error.message)

    return guarded


# ---- Bad requests and outages --------------------------------------------------------------


def bad_request(message: str) -> HttpResponse:
    """The one 400 page, in the frame: what in the request cannot be read.

    Drawn without the request (no context processor, so no session, login or role is read).
    """
    return HttpResponseBadRequest(render_to_string("400.html", {"message": message}))


def unavailable() -> HttpResponse:
    """The one 503 page, in the frame, with Retry-After: the database cannot be reached.

    Drawn without the request, so it needs no database: the frame shows no login and no menu.
    """
    context = {"retry_after": RETRY_AFTER_SECONDS}
    response = HttpResponse(render_to_string("503.html", context), status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


# ---- Flash messages -------------------------------------------------------------------------


def flash(request: HttpRequest, message: str) -> None:
    """Say what an action did, once, on the page that answers it.

    Shown by `ui/flash.html` on the redirect's target, or in the fragment an htmx request swaps in.
    """
    messages.success(request, message)


def template_for(request: HttpRequest, name: str, partial: str) -> str:
    """The page's template, or only its `{% partialdef partial %}` for an htmx request."""
    return f"{name}#{partial}" if getattr(request, "htmx", False) else name

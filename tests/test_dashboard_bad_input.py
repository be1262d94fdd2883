"""NUL or a lone surrogate in a page's path or query is a 400 page saying what was wrong.

On every dashboard and admin page, never a 500; the API keeps its JSON envelope.

The routes are read from the site's urlconf, so a new page is walked without a change here.
"""

from __future__ import annotations

import pytest
from django.test import Client

from tests.cast import make_login
from tests.diagnostics.dashboard import conflict
from tests.site_routes import CHANGELISTS, PAGES, ROUTES, parameters_of, path_of

pytestmark = pytest.mark.django_db

# As sent on the wire: NUL, and U+D800 (half of a UTF-16 pair) in the UTF-8-like bytes that
# encode it, which are not UTF-8.
BAD = {"nul": "a%00b", "surrogate": "a%ED%A0%80b"}
SAID = {"nul": "NUL character", "surrogate": "not UTF-8 text"}
# Every query parameter a dashboard page reads (its filters, pagers and forms), and one no page reads.
QUERY_NAMES = (
    "q",
    "page",
    "sort",
    "owner",
    "days",
    "conflict",
    "mine",
    "limit",
    "next",
    "uncertain",
    "keys",
    "changes",
    "model",
    "dataset",
    "env",
    "version",
    "n",
    "seed",
    "read-by-no-page",
)
# The admin's own query parameters on a changelist: search, ordering, page, the preserved filters.
ADMIN_QUERY_NAMES = ("q", "o", "p", "_changelist_filters", "_to_field", "_popup")


@pytest.fixture
def client() -> Client:
    """A superuser client, with alice's conflict to show, that returns a 500 as a response.

    A superuser holds every dashboard role and the admin; getting a 500 back lets every case of a
    route be tried.
    """
    conflict("alice")
    client = Client(raise_request_exception=False)
    client.force_login(make_login("superuser"))
    return client


def refused_badly(response, kind: str) -> str | None:
    """What is wrong with the answer to a bad request, or None when it is the 400 page."""
    if response.status_code != 400:
        return f"answered {response.status_code}"
    text = response.content.decode()
    if "<h1>Bad request</h1>" not in text or SAID[kind] not in text:
        return "answered 400 without the page saying what was wrong"
    return None


@pytest.mark.parametrize("kind", BAD)
@pytest.mark.parametrize("route", [route for route in ROUTES if parameters_of(route)])
def test_a_bad_path_parameter_is_a_400_page(client, route, kind):
    failures = []
    for name in parameters_of(route):
        path = path_of(route, BAD[kind], at=name)
        for method in ("get", "post"):
            problem = refused_badly(getattr(client, method)(path), kind)
            if problem:
                failures.append(f"{method.upper()} {path}: {problem}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("kind", BAD)
@pytest.mark.parametrize("route", PAGES)
def test_a_bad_query_parameter_of_a_page_is_a_400_page(client, route, kind):
    path = path_of(route)
    failures = []
    for query in [f"{name}={BAD[kind]}" for name in QUERY_NAMES] + [f"{BAD[kind]}=1"]:
        problem = refused_badly(client.get(f"{path}?{query}"), kind)
        if problem:
            failures.append(f"GET {path}?{query}: {problem}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("kind", BAD)
@pytest.mark.parametrize("changelist", CHANGELISTS)
def test_a_bad_admin_filter_or_query_parameter_is_a_400_page(client, changelist, kind):
    listed = client.get(changelist)
    assert listed.status_code == 200
    filters = [name for spec in listed.context["cl"].filter_specs for name in spec.expected_parameters()]
    failures = []
    for name in [*filters, *ADMIN_QUERY_NAMES]:
        problem = refused_badly(client.get(f"{changelist}?{name}={BAD[kind]}"), kind)
        if problem:
            failures.append(
                f"GET {changelist}?{name}=…: {problem} ({'filter' if name in filters else 'query'})"
            )
    assert not failures, "\n".join(failures)


def test_the_walk_covers_the_dashboard_and_the_admin_filters():
    """The walks above see the pages and filters the issue named, so they walk what is routed."""
    assert {"owners/", "owners/<str:user_id>/beliefs/<str:key>/", "accounts/login/"} <= set(PAGES)
    assert {"/admin/deposits/deposit/", "/admin/jobs/jobrun/"} <= set(CHANGELISTS)


def test_the_page_says_which_parameter_and_what_is_wrong_in_the_frame(client):
    response = client.get("/owners/?q=threshold%00")
    assert response.status_code == 400
    text = response.content.decode()
    assert "The query parameter “q” holds a NUL character" in text
    assert '<link rel="stylesheet"' in text and 'class="topbar"' in text
    assert response["Content-Type"] == "text/html; charset=utf-8"


def test_an_anonymous_request_with_a_nul_is_refused_before_the_login_redirect():
    response = Client().get("/owners/?q=%00")
    assert response.status_code == 400


@pytest.mark.parametrize("path", ["/users/alice/recall?q=a%00", "/users/a%00/deposits"])
def test_the_api_keeps_its_json_envelope(api, path):
    # With a key: a request without one is refused 401 before its line is read (api.md).
    answer = api.get(path)
    assert answer.status == 422
    assert answer.body["error"]["code"] == "validation_error"

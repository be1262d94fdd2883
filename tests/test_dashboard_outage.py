"""With the database unreachable every page answers the 503 page with Retry-After.

Every dashboard and admin page, the login included: never a 500, never a traceback (on the page or
in the log).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from unittest import mock

import pytest
from django.db import OperationalError, close_old_connections, connections
from django.test import Client

from tests.cast import make_login
from tests.deposits.dashboard import split
from tests.site_routes import PAGES, path_of

pytestmark = pytest.mark.django_db

REFUSED = 'connection to server at "127.0.0.1", port 5432 failed: Connection refused'


def client_of(role: str | None) -> Client:
    """A client logged in as `role` (its session is written now, while the database is up)."""
    client = Client(raise_request_exception=False)
    if role is not None:
        client.force_login(make_login(role))
    return client


@pytest.fixture
def clients() -> dict[str | None, Client]:
    return {role: client_of(role) for role in (None, "reviewer", "superuser")}


@pytest.fixture
def bag() -> str:
    """A bag page's path (alice's conflict)."""
    return split("alice").url


def outage() -> mock._patch:
    """Every use of the database fails as when its server is unreachable.

    Connecting, or checking the connection, which every query and transaction does first, is
    refused.
    """
    return mock.patch.object(
        connections["default"], "ensure_connection", side_effect=OperationalError(REFUSED)
    )


@pytest.fixture
def database_down(clients: dict[str | None, Client]) -> Iterator[None]:
    """The outage, once the clients have logged in."""
    with outage():
        yield


def assert_unavailable_page(response) -> None:
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    text = response.content.decode()
    assert "<h1>Database unavailable</h1>" in text
    assert 'class="topbar"' in text  # in the frame, drawn without the database
    assert "Traceback" not in text and "OperationalError" not in text


@pytest.mark.parametrize(
    ("role", "method", "path"),
    [
        (None, "post", "/accounts/login/"),
        ("reviewer", "get", "/accounts/login/"),
        ("reviewer", "get", "/"),
        ("reviewer", "get", "BAG"),
        ("reviewer", "get", "/owners/?q=alice"),
        ("reviewer", "get", "/no-such-page/"),
        ("reviewer", "post", "/accounts/logout/"),
        ("superuser", "get", "/admin/"),
        ("superuser", "get", "/admin/deposits/deposit/?polarity=positive"),
        (None, "post", "/admin/login/"),
    ],
)
def test_a_page_answers_503_with_retry_after_while_the_database_is_down(clients, bag, role, method, path):
    client = clients[role]
    data = {"username": "rita", "password": "whatever"} if method == "post" else None
    with outage():
        response = getattr(client, method)(bag if path == "BAG" else path, data)
    assert_unavailable_page(response)


def test_every_page_answers_503_unless_it_needs_no_database(clients, database_down):
    """Walked as a logged-in operator, every page that needs the database answers 503.

    Every page reads the session. A method a page does not take (405) and the icon's redirect
    (301) are answered before any database is needed.
    """
    failures = []
    for route in PAGES:
        for method in ("get", "post"):
            response = getattr(clients["superuser"], method)(path_of(route))
            unavailable = response.status_code == 503 and response.get("Retry-After") == "5"
            if not unavailable and response.status_code not in (301, 405):
                failures.append(f"{method.upper()} {path_of(route)}: answered {response.status_code}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/"])
def test_the_login_form_needs_no_database_so_it_is_shown_to_a_new_visitor(clients, database_down, path):
    """The login form needs no database, so a new visitor sees it.

    Logging in is what needs the database (the 503 above); the form, to a browser with no session
    yet, needs none.
    """
    assert clients[None].get(path).status_code == 200


# A view's page, and an unknown path whose 404 page, drawing the frame, met the outage.
@pytest.mark.parametrize("path", ["/", "/no-such-page/"])
def test_an_outage_is_logged_as_one_line_per_request_without_a_traceback(
    clients, database_down, caplog, path
):
    with caplog.at_level(logging.INFO):
        assert clients["reviewer"].get(path).status_code == 503
    assert [(record.levelname, record.exc_info) for record in caplog.records] == [("ERROR", None)]
    line = caplog.records[0].getMessage()
    assert line.startswith(f"database unavailable: GET {path}: ") and "Connection refused" in line
    assert "\n" not in line


def test_the_next_request_after_the_outage_is_served(clients, bag):
    with outage():
        assert clients["reviewer"].get(bag).status_code == 503
    assert clients["reviewer"].get(bag).status_code == 200


# Transactional: the connection really ends, so no test transaction can wrap it.
@pytest.mark.django_db(transaction=True)
def test_a_connection_the_server_ended_is_503_and_the_next_request_reconnects(on_postgres):
    """The fault of a PostgreSQL restart: the server ends the connection a reviewer's page uses."""
    client = client_of("reviewer")
    page = split("alice").url
    connection = connections["default"]
    connection.ensure_connection()
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [connection.connection.info.backend_pid])
    finally:
        other.close()
    try:
        assert_unavailable_page(client.get(page))
        # What the server does at the end of each request (the test client does not): drop a
        # connection that failed, so the next request opens a new one.
        close_old_connections()
        assert client.get(page).status_code == 200
    finally:
        connection.close()  # a failed assertion leaves the teardown no dead connection

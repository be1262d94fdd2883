"""Every dashboard route, read from the urlconf, checks access.

Anonymous is sent to log in, a login in neither group gets 403 (only /help/ is for anyone logged
in). Each route is asked by GET and by POST; the method it does not take may answer 405, the one it
takes must answer the refusal. A new page is covered as soon as it is routed.
"""

from __future__ import annotations

import pytest

from tests.cast import make_login
from tests.site_routes import PAGES, path_of

pytestmark = pytest.mark.django_db

# Routes anyone may open: the login and logout pages, the favicon; /help/ wants a login only.
OPEN = {"accounts/login/", "accounts/logout/", "favicon.ico"}
LOGIN_ONLY = {"help/"}
CHECKED = [route for route in PAGES if route not in OPEN]


def answers(client, route: str) -> list[int]:
    path = path_of(route)
    return [client.get(path).status_code, client.post(path).status_code]


def test_the_walk_covers_the_review_desk():
    assert {"conflicts/next/", "conflicts/resolved/", "help/"} <= set(CHECKED)
    assert any("take-over" in route for route in CHECKED) and any("undo" in route for route in CHECKED)


@pytest.mark.parametrize("route", CHECKED)
def test_anonymous_is_sent_to_log_in(client, route):
    statuses = answers(client, route)
    assert 302 in statuses and set(statuses) <= {302, 405}, (route, statuses)


@pytest.mark.parametrize("route", CHECKED)
def test_a_login_in_neither_group_is_refused(client, route):
    client.force_login(make_login("no-role"))
    statuses = answers(client, route)
    expected = 200 if route in LOGIN_ONLY else 403
    assert expected in statuses and set(statuses) <= {expected, 405}, (route, statuses)

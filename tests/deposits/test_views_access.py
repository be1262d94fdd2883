"""Every deposit page and action checks access: login first, then the role it needs."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from deposits.models import Deposit
from tests.cast import make_login
from tests.deposits.dashboard import Split, split

pytestmark = pytest.mark.django_db

PAGES = ("queue", "bag", "deposit", "recall")
ACTIONS = ("resolve from the queue", "resolve on the bag page", "retract", "erase")


def request(client, what: str, bag: Split, **headers: str):
    """Ask for a page or take an action on `bag`; returns the response."""
    deposit = bag.deposit_url(bag.negative[0])
    reason = {"reason": "checked by hand"}
    calls = {
        "queue": lambda: client.get("/conflicts/?owner=al&page=1", headers=headers),
        "bag": lambda: client.get(bag.url, headers=headers),
        "deposit": lambda: client.get(deposit, headers=headers),
        "recall": lambda: client.get(f"/owners/{bag.user_id}/recall/?q=threshold", headers=headers),
        "resolve from the queue": lambda: client.post(
            bag.resolve_url, {"keep": bag.positive, **reason}, headers=headers
        ),
        "resolve on the bag page": lambda: client.post(
            f"{bag.url}resolve/", {"keep": bag.positive, **reason}, headers=headers
        ),
        "retract": lambda: client.post(f"{deposit}retract/", reason, headers=headers),
        "erase": lambda: client.post(f"{deposit}erase/", reason, headers=headers),
    }
    return calls[what]()


@pytest.fixture
def bag() -> Split:
    return split()


@pytest.mark.parametrize("what", PAGES + ACTIONS)
def test_anonymous_is_sent_to_log_in_and_back(client, bag, what):
    response = request(client, what, bag)
    assert response.status_code == 302
    path = response.wsgi_request.get_full_path()
    assert response.url == f"/accounts/login/?next={quote(path, safe='/')}"
    assert Deposit.objects.count() == 2


@pytest.mark.parametrize("what", PAGES + ACTIONS)
def test_an_anonymous_htmx_request_sends_the_whole_window_to_log_in(client, bag, what):
    response = request(client, what, bag, HX_Request="true", HX_Current_URL="http://testserver/conflicts/")
    assert response["HX-Redirect"] == "/accounts/login/?next=/conflicts/"


@pytest.mark.parametrize("what", PAGES + ACTIONS)
def test_a_login_with_no_role_gets_403(client, bag, what):
    client.force_login(make_login("no-role"))
    response = request(client, what, bag)
    assert response.status_code == 403
    assert "needs the reviewer or operator role" in response.content.decode()
    assert Deposit.objects.count() == 2 and not Deposit.objects.filter(retracted_at__isnull=False).exists()


@pytest.mark.parametrize("what", PAGES)
@pytest.mark.parametrize("role", ["reviewer", "operator", "superuser"])
def test_reviewers_and_operators_open_every_page(client, bag, what, role):
    client.force_login(make_login(role))
    assert request(client, what, bag).status_code == 200


@pytest.mark.parametrize("what", ACTIONS)
@pytest.mark.parametrize("role", ["reviewer", "operator"])
def test_reviewers_and_operators_take_every_action_but_erase(client, bag, what, role):
    client.force_login(make_login(role))
    response = request(client, what, bag)
    if what == "erase" and role == "reviewer":
        assert response.status_code == 403
        assert "This needs the operator role" in response.content.decode()
        assert Deposit.objects.filter(pk=bag.negative[0]).exists()
    else:
        assert response.status_code == 302, response.content.decode()[:2000]

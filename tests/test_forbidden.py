"""The access checks every dashboard view makes, and the 403 page in the frame."""

from __future__ import annotations

import pytest

from tests.cast import make_login

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.dashboard_urls")]

PAGES = {"reviewer": "/test/reviewer/", "operator": "/test/operator/"}


@pytest.mark.parametrize("path", [*PAGES.values(), "/test/operator-action/"])
def test_anonymous_is_sent_to_log_in_and_back(client, path):
    response = client.get(f"{path}?page=2&q=a b")
    assert response.status_code == 302
    assert response.url == f"/accounts/login/?next={path}%3Fpage%3D2%26q%3Da%2520b"


def test_an_anonymous_htmx_request_sends_the_whole_window_to_log_in_and_back_to_its_page(client):
    response = client.post(
        "/test/operator-action/",
        headers={"HX-Request": "true", "HX-Current-URL": "http://testserver/owners/alice/?page=3"},
    )
    assert response.status_code == 200
    assert response["HX-Redirect"] == "/accounts/login/?next=/owners/alice/%3Fpage%3D3"


@pytest.mark.parametrize("path", PAGES.values())
def test_a_login_with_no_role_gets_403_naming_the_role_it_needs(client, path):
    client.force_login(make_login("no-role"))
    response = client.get(path)
    assert response.status_code == 403
    text = response.content.decode()
    assert "<h1>Not allowed</h1>" in text
    needed = "the reviewer or operator role" if path == PAGES["reviewer"] else "the operator role"
    assert f"This needs {needed}. You are logged in as “nora”, who has no dashboard role." in text
    # In the frame: the login's name and a way out, but no page it may not open.
    assert 'action="/accounts/logout/"' in text and ">nora<" in text
    assert 'href="/owners/"' not in text


def test_a_reviewer_gets_the_reviewer_page_and_403_on_the_operator_page(client):
    client.force_login(make_login("reviewer"))
    assert client.get(PAGES["reviewer"]).status_code == 200
    refused = client.get(PAGES["operator"])
    assert refused.status_code == 403
    text = refused.content.decode()
    assert "This needs the operator role. You are logged in as “rita”, who is a reviewer." in text
    assert 'href="/owners/"' in text and 'href="/provenance/"' not in text


def test_a_reviewer_is_refused_an_operator_action_on_a_reviewer_page(client):
    client.force_login(make_login("reviewer"))
    assert client.get("/test/deposit/").status_code == 200
    assert client.post("/test/deposit/").status_code == 403
    assert client.post("/test/operator-action/", headers={"HX-Request": "true"}).status_code == 403


@pytest.mark.parametrize("role", ["operator", "superuser"])
def test_operators_and_superusers_get_every_page_and_action(client, role):
    client.force_login(make_login(role))
    for path in PAGES.values():
        assert client.get(path).status_code == 200
    assert client.post("/test/deposit/").status_code == 200
    assert client.post("/test/operator-action/").content == b'<p id="done">Done.</p>'


def test_an_inactive_login_counts_as_logged_out(client):
    user = make_login("operator")
    client.force_login(user)
    user.is_active = False
    user.save()
    assert client.get(PAGES["reviewer"]).status_code == 302


def test_the_roles_are_read_once_per_request(client, django_assert_num_queries):
    client.force_login(make_login("operator"))
    client.get(PAGES["operator"])
    # session, user, roles; the frame's navigation and role checks reuse them.
    with django_assert_num_queries(3):
        assert client.get(PAGES["operator"]).status_code == 200

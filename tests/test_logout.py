"""/accounts/logout/: POST only; back to the login page, saying so."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.cast import make_login

pytestmark = pytest.mark.django_db

LOGOUT = "/accounts/logout/"


@pytest.mark.parametrize("role", ["no-role", "reviewer", "operator"])
def test_it_logs_out_and_returns_to_the_login_page(client, role):
    client.force_login(make_login(role))
    response = client.post(LOGOUT, follow=True)
    assert response.redirect_chain == [("/accounts/login/", 302)]
    assert "You are logged out." in response.content.decode()
    assert "_auth_user_id" not in client.session
    assert client.get("/").url == "/accounts/login/?next=/"


def test_anonymous_logout_just_lands_on_the_login_page(client):
    response = client.post(LOGOUT)
    assert response.status_code == 302 and response.url == "/accounts/login/"


def test_it_rejects_get(client):
    client.force_login(make_login("reviewer"))
    assert client.get(LOGOUT).status_code == 405
    assert "_auth_user_id" in client.session


def test_it_needs_the_csrf_token():
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(make_login("reviewer"))
    assert strict.post(LOGOUT).status_code == 403
    assert "_auth_user_id" in strict.session

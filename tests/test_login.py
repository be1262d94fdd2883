"""/accounts/login/: Django's login in the frame, with throttling after five failures."""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.test import Client

from tests.cast import LOGINS, PASSWORD, make_login

pytestmark = pytest.mark.django_db

LOGIN = "/accounts/login/"
WRONG = "Please enter a correct username and password"
THROTTLED = "Too many failed attempts"


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def post_login(client: Client, username: str, password: str, path: str = LOGIN, **extra):
    return client.post(path, {"username": username, "password": password}, **extra)


@pytest.mark.parametrize("role", [None, "no-role", "reviewer", "operator"])
def test_it_shows_the_form_to_anyone(client, role):
    if role:
        client.force_login(make_login(role))
    page = client.get(LOGIN)
    assert page.status_code == 200
    text = page.content.decode()
    assert "<h1>Log in to Atlaso</h1>" in text
    assert 'name="username"' in text and 'name="password"' in text
    assert '<button type="submit" class="primary">Log in</button>' in text


@pytest.mark.parametrize("role", ["no-role", "reviewer", "operator", "superuser"])
def test_the_right_password_logs_in_and_lands_on_the_overview(client, role):
    make_login(role, password=PASSWORD)
    response = post_login(client, LOGINS[role], PASSWORD)
    assert response.status_code == 302 and response.url == "/"
    assert client.session["_auth_user_id"]


def test_it_goes_back_to_next_after_logging_in(client):
    make_login("reviewer", password=PASSWORD)
    response = client.post(LOGIN, {"username": "rita", "password": PASSWORD, "next": "/conflicts/?page=2"})
    assert response.url == "/conflicts/?page=2"


def test_it_refuses_a_next_on_another_site(client):
    make_login("reviewer", password=PASSWORD)
    response = client.post(LOGIN, {"username": "rita", "password": PASSWORD, "next": "https://evil.example/"})
    assert response.url == "/"


def test_a_wrong_password_shows_the_error_and_logs_nobody_in(client):
    make_login("reviewer", password=PASSWORD)
    response = post_login(client, "rita", "wrong-password")
    assert response.status_code == 200
    assert WRONG in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_five_failures_for_one_username_lock_it_for_every_address(client):
    make_login("reviewer", password=PASSWORD)
    answers = [post_login(client, "rita", "guess", REMOTE_ADDR=f"10.0.0.{n}") for n in range(5)]
    assert [WRONG in a.content.decode() for a in answers] == [True] * 4 + [False]
    assert answers[-1].status_code == 429 and THROTTLED in answers[-1].content.decode()
    refused = post_login(client, "rita", PASSWORD, REMOTE_ADDR="10.0.0.99")
    assert refused.status_code == 429
    text = refused.content.decode()
    assert THROTTLED in text and "paused for 15 minutes" in text and "<h1>Logging in is paused</h1>" in text
    assert "_auth_user_id" not in client.session


def test_five_failures_from_one_address_lock_it_for_every_username(client):
    make_login("reviewer", password=PASSWORD)
    for n in range(5):
        post_login(client, f"guess-{n}", "guess", REMOTE_ADDR="10.0.0.7")
    assert post_login(client, "rita", PASSWORD, REMOTE_ADDR="10.0.0.7").status_code == 429
    assert post_login(client, "rita", PASSWORD, REMOTE_ADDR="10.0.0.8").status_code == 302


def test_the_admin_login_counts_and_obeys_the_same_failures(client):
    make_login("superuser", password=PASSWORD)
    for _ in range(3):
        post_login(client, "sam", "guess", path="/admin/login/")
    for _ in range(2):
        post_login(client, "sam", "guess")
    refused = post_login(client, "sam", PASSWORD, path="/admin/login/?next=/admin/")
    assert refused.status_code == 429 and THROTTLED in refused.content.decode()


def test_the_lock_lifts_fifteen_minutes_after_the_last_failure(client):
    make_login("reviewer", password=PASSWORD)
    for _ in range(5):
        post_login(client, "rita", "guess")
    last = AccessAttempt.objects.get().attempt_time
    AccessAttempt.objects.update(attempt_time=last - timedelta(minutes=14))
    assert post_login(client, "rita", PASSWORD).status_code == 429
    AccessAttempt.objects.update(attempt_time=last - timedelta(minutes=16))
    assert post_login(client, "rita", PASSWORD).status_code == 302


def test_a_refused_attempt_while_locked_does_not_extend_the_lock(client):
    make_login("reviewer", password=PASSWORD)
    for _ in range(5):
        post_login(client, "rita", "guess")
    AccessAttempt.objects.update(
        attempt_time=AccessAttempt.objects.get().attempt_time - timedelta(minutes=10)
    )
    post_login(client, "rita", "guess")  # refused unseen, not counted
    AccessAttempt.objects.update(attempt_time=AccessAttempt.objects.get().attempt_time - timedelta(minutes=6))
    assert post_login(client, "rita", PASSWORD).status_code == 302

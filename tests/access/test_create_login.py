"""`create_login NAME --role reviewer|operator [--password-file F]`."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import CommandError, call_command
from django.test import RequestFactory

from atlaso_site.access.roles import is_operator, is_reviewer

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def run(*args: str) -> str:
    out = StringIO()
    call_command("create_login", *args, stdout=out)
    return out.getvalue()


def logs_in(username: str, password: str) -> bool:
    request = RequestFactory().post("/accounts/login/")
    return authenticate(request, username=username, password=password) is not None


def prompt(monkeypatch, *answers: str) -> None:
    replies = iter(answers)
    monkeypatch.setattr("getpass.getpass", lambda _prompt="": next(replies))


def test_it_creates_a_reviewer_whose_password_comes_from_a_file(tmp_path):
    secret = tmp_path / "pw"
    secret.write_text("a-long-password\n")
    assert run("rita", "--role", "reviewer", "--password-file", str(secret)) == (
        "Created login rita (reviewer); log in at /accounts/login/\n"
    )
    user = get_user_model().objects.get(username="rita")
    assert is_reviewer(user) and not is_operator(user) and not user.is_staff
    assert logs_in("rita", "a-long-password")


def test_it_asks_twice_when_there_is_no_file(monkeypatch):
    prompt(monkeypatch, "a-long-password", "a-long-password")
    run("otto", "--role", "operator")
    assert is_operator(get_user_model().objects.get(username="otto"))
    assert logs_in("otto", "a-long-password")


def test_running_it_again_changes_the_password_and_the_role(monkeypatch):
    prompt(monkeypatch, "first-password", "first-password", "second-password", "second-password")
    run("rita", "--role", "operator")
    assert run("rita", "--role", "reviewer") == "Updated login rita: new password, role reviewer\n"
    user = get_user_model().objects.get(username="rita")
    assert (is_reviewer(user), is_operator(user)) == (True, False)
    assert list(user.groups.values_list("name", flat=True)) == ["reviewer"]
    assert logs_in("rita", "second-password") and not logs_in("rita", "first-password")
    assert get_user_model().objects.count() == 1


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        (("",), "The password is empty; give one of at least 8 characters."),
        (("short", "short"), "This password is too short. It must contain at least 8 characters."),
        (("a-long-password", "another-password"), "The two passwords differ; nothing was changed."),
    ],
)
def test_it_refuses_an_empty_short_or_mistyped_password_and_changes_nothing(monkeypatch, answers, message):
    prompt(monkeypatch, *answers)
    with pytest.raises(CommandError, match=message):
        run("rita", "--role", "reviewer")
    assert not get_user_model().objects.exists()


def test_it_refuses_an_empty_password_file(tmp_path):
    empty = tmp_path / "pw"
    empty.write_text("")
    with pytest.raises(CommandError, match="The password is empty"):
        run("rita", "--role", "reviewer", "--password-file", str(empty))


def test_it_refuses_a_missing_password_file(tmp_path):
    with pytest.raises(CommandError, match="Cannot read the password file"):
        run("rita", "--role", "reviewer", "--password-file", str(tmp_path / "nope"))


def test_it_refuses_a_name_that_is_not_a_username(tmp_path):
    secret = tmp_path / "pw"
    secret.write_text("a-long-password")
    with pytest.raises(CommandError, match="Enter a valid username"):
        run("rita reviewer", "--role", "reviewer", "--password-file", str(secret))


def test_it_refuses_an_unknown_role():
    with pytest.raises(CommandError, match="invalid choice: 'admin'"):
        run("rita", "--role", "admin")


def test_with_no_terminal_and_no_file_it_says_how_to_give_a_password(monkeypatch):
    def no_input(_prompt: str = "") -> str:
        raise EOFError

    monkeypatch.setattr("getpass.getpass", no_input)
    with pytest.raises(CommandError, match="--password-file"):
        run("rita", "--role", "reviewer")

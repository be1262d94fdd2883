"""`ensure_admin` (run by `make run`): the `admin` login, made once, its password kept in var/."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command
from django.test import RequestFactory

pytestmark = pytest.mark.django_db


def run(settings, tmp_path) -> str:
    settings.VAR_DIR = tmp_path
    out = StringIO()
    call_command("ensure_admin", stdout=out)
    return out.getvalue()


def test_it_makes_an_admin_who_logs_in_with_the_password_it_keeps(settings, tmp_path):
    said = run(settings, tmp_path)
    password = (tmp_path / "admin-password.txt").read_text().strip()
    assert f"admin / {password}" in said
    assert (tmp_path / "admin-password.txt").stat().st_mode & 0o777 == 0o600
    admin = authenticate(RequestFactory().post("/accounts/login/"), username="admin", password=password)
    assert admin is not None and admin.is_superuser


def test_running_it_again_keeps_the_login_and_its_password(settings, tmp_path):
    run(settings, tmp_path)
    password = (tmp_path / "admin-password.txt").read_text()
    again = run(settings, tmp_path)
    assert password not in again and "password in" in again
    assert (tmp_path / "admin-password.txt").read_text() == password

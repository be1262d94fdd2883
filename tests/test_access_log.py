"""An access refusal is logged as one line saying who, what and why: never a traceback."""

from __future__ import annotations

import logging

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.cast import make_login

pytestmark = pytest.mark.django_db


def refusal_records(caplog, client: Client, path: str) -> list[logging.LogRecord]:
    """The log records of one request, which must be refused."""
    with caplog.at_level(logging.DEBUG):
        caplog.clear()
        assert client.get(path).status_code == 403
    return [record for record in caplog.records if record.levelno >= logging.INFO]


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_reviewer_refused_provenance_is_one_line_without_a_traceback(caplog):
    (record,) = refusal_records(caplog, logged_in(make_login("reviewer")), "/provenance/")
    assert record.levelname == "WARNING"
    assert record.exc_info is None and record.exc_text is None
    line = record.getMessage()
    assert "\n" not in line and "Traceback" not in line
    assert "rita" in line and "GET /provenance/" in line and "operator role" in line


def test_a_login_with_no_role_refused_a_page_is_one_line_naming_the_role_it_lacks(caplog):
    (record,) = refusal_records(caplog, logged_in(make_login("no-role")), "/owners/")
    assert record.exc_info is None
    line = record.getMessage()
    assert "nora" in line and "GET /owners/" in line and "reviewer or operator role" in line


def test_an_admin_refusal_is_one_line_too(caplog):
    staff = get_user_model().objects.create_user("stella", is_staff=True)
    (record,) = refusal_records(caplog, logged_in(staff), "/admin/deposits/deposit/")
    assert record.exc_info is None
    assert "stella" in record.getMessage() and "/admin/deposits/deposit/" in record.getMessage()


def test_the_refused_page_still_says_why():
    response = logged_in(make_login("reviewer")).get("/provenance/")
    assert "This needs the operator role." in response.content.decode()

"""`/`: the Overview (diagnostics/views.py), in the frame, for reviewers and operators."""

from __future__ import annotations

import re

import pytest

from deposits.domain.validation import validate_deposit
from deposits.services.deposits import deposit_add
from tests.cast import make_login

pytestmark = pytest.mark.django_db


def test_anonymous_is_sent_to_the_login_page(client):
    response = client.get("/")
    assert response.status_code == 302 and response.url == "/accounts/login/?next=/"


def test_a_login_with_no_role_is_refused(client):
    client.force_login(make_login("no-role"))
    response = client.get("/")
    assert response.status_code == 403
    assert "needs the reviewer or operator role" in response.content.decode()


@pytest.mark.parametrize("role", ["reviewer", "operator", "superuser"])
def test_reviewers_and_operators_see_the_overview(client, role):
    client.force_login(make_login(role))
    page = client.get("/")
    assert page.status_code == 200
    assert "<h1>Overview</h1>" in page.content.decode()


def test_the_overview_counts_what_is_stored_and_links_to_the_api_docs(client):
    deposit_add(draft=validate_deposit("alice", {"content": "Alice prefers oat milk"}), channel="agent-a")
    client.force_login(make_login("reviewer"))
    text = client.get("/").content.decode()
    # Live counts, read from the tallies: the last snapshot's bag count may be minutes old.
    said = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", text))
    assert "This deployment now holds 1 live deposit for 1 memory owner." in said
    assert 'href="/api/v1/docs"' in text

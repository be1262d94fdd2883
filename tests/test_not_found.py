"""An unknown dashboard path answers 404 in the frame, not Django's bare page."""

from __future__ import annotations

import pytest

from tests.cast import make_login

pytestmark = pytest.mark.django_db


def test_an_unknown_path_answers_a_404_in_the_frame(client, settings):
    settings.DEBUG = False
    client.force_login(make_login("reviewer"))
    response = client.get("/no-such-page/<b>")
    assert response.status_code == 404
    body = response.content.decode()
    assert "<h1>Not found</h1>" in body
    assert "/no-such-page/%3Cb%3E" in body  # the path as requested, quoted: never markup
    assert "Conflict queue" in body


def test_the_icon_is_served_where_browsers_look_for_it(client):
    """Every page names the icon; pages that do not (API docs, admin) make browsers ask here."""
    answer = client.get("/favicon.ico")
    assert answer.status_code == 301 and answer.url.endswith("img/favicon.svg")
    assert 'rel="icon"' in client.get("/accounts/login/").content.decode()

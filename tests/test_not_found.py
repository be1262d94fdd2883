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

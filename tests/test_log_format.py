"""LOG_FORMAT: json gives one object a line with the request's fields; text stays a person's line."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client, RequestFactory

from atlaso_site.observability.logs import RequestContext, formatter
from atlaso_site.observability.middleware import Observed
from tests.cast import make_login
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[1]


def captured(log_format: str) -> tuple[io.StringIO, logging.Handler]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RequestContext())
    handler.setFormatter(formatter(log_format))
    logging.getLogger("atlaso.access").addHandler(handler)
    return stream, handler


@pytest.fixture
def json_lines():
    stream, handler = captured("json")
    yield stream
    logging.getLogger("atlaso.access").removeHandler(handler)


def only_line(stream: io.StringIO) -> dict:
    (line,) = stream.getvalue().splitlines()
    return json.loads(line)


def test_an_api_requests_line_names_its_route_status_duration_and_key(api: ApiClient, json_lines):
    api.get("/users/alice/recall?q=threshold", headers={"X-Request-ID": "r-1"})
    line = only_line(json_lines)
    assert line["time"].endswith("+00:00") and line["level"] == "INFO" and line["logger"] == "atlaso.access"
    assert (line["method"], line["route"], line["status"]) == ("GET", "api/v1/users/<user_id>/recall", 200)
    assert (line["key"], line["login"], line["request_id"]) == ("test agent-a", None, "r-1")
    assert line["path"] == "/api/v1/users/alice/recall" and isinstance(line["duration_ms"], float)
    assert line["message"].startswith("GET /api/v1/users/alice/recall 200 ")


def test_a_pages_line_names_the_login(json_lines):
    client = Client()
    client.force_login(make_login("reviewer"))
    assert client.get("/owners/").status_code == 200
    line = only_line(json_lines)
    assert (line["route"], line["login"], line["key"]) == ("owners/", "rita", None)


def test_a_path_with_a_newline_is_logged_on_one_line(api: ApiClient):
    stream, handler = captured("text")
    logging.getLogger("django.request").addHandler(handler)
    try:
        api.get("/users/alice%0AERROR%20forged/recall?q=x")  # refused: Django's line
    finally:
        logging.getLogger("django.request").removeHandler(handler)
        logging.getLogger("atlaso.access").removeHandler(handler)
    (text,) = stream.getvalue().splitlines()
    assert "[request_id=" in text
    request = RequestFactory().get("/owners/alice%0AERROR%20forged/")
    fields = Observed(request, "/static/").fields(200)  # an answered request's line
    assert fields["path"] == "/owners/alice%0AERROR%20forged/"


def test_the_settings_refuse_an_unknown_format():
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "atlaso_site.settings", "LOG_FORMAT": "xml"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and "LOG_FORMAT='xml' must be one of: text, json" in done.stderr


def test_a_refused_request_is_one_line_with_the_same_fields(api: ApiClient):
    stream, handler = captured("json")
    logging.getLogger("django.request").addHandler(handler)
    try:
        api.get("/users/alice/deposits/00000000-0000-0000-0000-000000000000")
    finally:
        logging.getLogger("django.request").removeHandler(handler)
        logging.getLogger("atlaso.access").removeHandler(handler)
    line = only_line(stream)
    assert (line["logger"], line["level"], line["status"]) == ("django.request", "WARNING", 404)
    assert line["route"] == "api/v1/users/<user_id>/deposits/<deposit_id>" and line["key"] == "test agent-a"
    assert "request" not in line and "status_code" not in line

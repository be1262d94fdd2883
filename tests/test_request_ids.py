"""Every response carries X-Request-ID, kept when sane, and every log line and envelope carries it.

A sane one sent is kept, any other replaced, never logged as given; error envelopes carry it as
request_id.
"""

from __future__ import annotations

import io
import json
import logging

import pytest
from django.test import Client

from atlaso_site.observability.logs import RequestContext, formatter
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

MALICIOUS = {
    "newline": "abc\nINFO atlaso.access: GET /forged 200",
    "ten kB": "a" * 10_000,
    "control": "abc\x1b[31mred\x00\x7f",
    "spaces": "two words",
    "quote": 'abc"def',
}


@pytest.fixture
def lines() -> io.StringIO:
    """What the console handler writes, in JSON, for the duration of a test."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RequestContext())
    handler.setFormatter(formatter("json"))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield stream
    finally:
        root.removeHandler(handler)


def records(stream: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_every_kind_of_answer_carries_a_request_id(api: ApiClient):
    answers = [
        api.get("/tiers").headers,
        api.get("/users/alice/deposits/00000000-0000-0000-0000-000000000000").headers,
        ApiClient(None).get("/tiers").headers,
        Client().get("/api/v1/no-such-endpoint"),
        Client().get("/accounts/login/"),
        Client().get("/owners/"),
        Client().get("/no/such/page/"),
        Client().get("/healthz"),
        Client().get("/readyz"),
        Client().get("/metrics"),
    ]
    ids = [answer["X-Request-ID"] for answer in answers]
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids), ids
    assert len(set(ids)) == len(ids)


def test_a_sane_id_sent_is_kept_in_the_header_the_envelope_and_the_log_line(api: ApiClient, lines):
    sent = "req_01J9ZK3Q4W-client.side:7"
    refused = api.post(
        "/users/alice/deposits", {"content": "x", "polarity": "sideways"}, headers={"X-Request-ID": sent}
    )
    assert refused.status == 422
    assert refused.headers["X-Request-ID"] == sent
    assert refused.body["error"]["request_id"] == sent
    (line,) = records(lines)  # one line a request: Django's, for a refusal, with its fields
    assert (line["request_id"], line["status"], line["route"]) == (
        sent,
        422,
        "api/v1/users/<user_id>/deposits",
    )
    assert line["key"] == "test agent-a" and line["logger"] == "django.request"


@pytest.mark.parametrize("name", MALICIOUS)
def test_an_insane_id_is_replaced_and_never_logged_as_given(api: ApiClient, lines, name: str):
    sent = MALICIOUS[name]
    answer = api.post(
        "/users/alice/deposits", {"content": "x", "polarity": "sideways"}, headers={"X-Request-ID": sent}
    )
    given = answer.headers["X-Request-ID"]
    assert given != sent and len(given) == 32
    assert answer.body["error"]["request_id"] == given
    text = lines.getvalue()
    assert sent not in text and sent[:40] not in text
    assert given in text
    assert all(line.startswith("{") for line in text.splitlines())  # no forged line


def test_a_page_served_without_a_request_logs_no_id_of_an_earlier_one(api: ApiClient, lines):
    api.get("/tiers", headers={"X-Request-ID": "first-request"})
    logging.getLogger("atlaso.test").warning("outside any request")
    assert records(lines)[-1]["request_id"] is None

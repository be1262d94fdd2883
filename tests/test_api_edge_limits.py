"""The API's size limits: the largest documented request passes, anything larger is 413.

A long query string is judged by the API itself, quickly.
"""

from __future__ import annotations

import json
import time

import pytest
from django.conf import settings
from django.test import override_settings

from atlaso_site.middleware import MAX_QUERY_STRING
from deposits.domain.validation import MAX_BULK_ITEMS, MAX_CONTENT
from deposits.models import Deposit
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

# Every character outside ASCII, so JSON sends each as its 6-byte \uXXXX escape: the widest form.
WORDS = "\u00e9\u00e8\u00ea\u00a0"


def _largest_documented_bulk() -> bytes:
    """1,000 items of 8,000 characters in the widest JSON encoding, each with a scope and a belief."""
    content = (WORDS * (MAX_CONTENT // len(WORDS) + 1))[: MAX_CONTENT - 1] + "\u00e9"
    items = [
        {
            "content": content,
            "polarity": "cautionary",
            "evidence_grade": "observed",
            "scope": {"model": "gpt-5", "env": "prod", "n": index},
            "belief": {"key": f"limit.{index}", "value": "48 MiB"},
            "idempotency_key": f"largest-{index:04d}",
        }
        for index in range(MAX_BULK_ITEMS)
    ]
    return json.dumps({"items": items}).encode()


def test_the_largest_documented_bulk_is_accepted_whole(api):
    body = _largest_documented_bulk()
    assert 48_000_000 < len(body) <= settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    answer = api.call("POST", "/users/alice/deposits/bulk", raw=body)
    assert answer.status == 200, answer.body.get("error")
    assert (len(answer.body["committed"]), answer.body["failed"]) == (MAX_BULK_ITEMS, [])
    assert Deposit.objects.filter(user_id="alice").count() == MAX_BULK_ITEMS


def _deposit_of(size: int) -> bytes:
    """A one-deposit body of exactly `size` bytes."""
    body = json.dumps({"content": ""}).encode()
    return json.dumps({"content": "x" * (size - len(body))}).encode()


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=2048)
def test_a_body_one_byte_over_the_limit_is_413_in_the_envelope_and_stores_nothing(api):
    body = _deposit_of(2049)
    assert len(body) == 2049
    answer = api.call("POST", "/users/alice/deposits", raw=body)
    assert answer.status == 413
    assert answer.body == {
        "kind": "error",
        "error": {
            "code": "payload_too_large",
            "message": answer.body["error"]["message"],
            "limit": 2048,
            "request_id": answer.headers["X-Request-ID"],
        },
    }
    assert not Deposit.objects.exists()


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=2048)
def test_a_body_at_the_limit_is_read(api):
    assert api.call("POST", "/users/alice/deposits", raw=_deposit_of(2048)).status == 201


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=2048)
def test_a_large_body_without_a_key_is_401_not_read(db):
    answer = ApiClient(None).call("POST", "/users/alice/deposits", raw=json.dumps({"content": "x" * 4096}))
    assert (answer.status, answer.body["error"]["code"]) == (401, "unauthorized")


def test_a_ten_megabyte_query_string_is_refused_quickly_naming_the_parameter(api):
    started = time.monotonic()
    answer = api.get("/users/alice/recall?limit=5&q=" + "a" * 10_000_000)
    elapsed = time.monotonic() - started
    assert (answer.status, answer.body["error"]["code"], answer.body["error"]["field"]) == (
        422,
        "validation_error",
        "q",
    )
    assert elapsed < 2.0


def test_a_query_string_at_the_limit_is_answered(api):
    query = "q=threshold"
    query += "&limit=10" * ((MAX_QUERY_STRING - len(query)) // len("&limit=10"))
    query += "&" * (MAX_QUERY_STRING - len(query))
    assert len(query) == MAX_QUERY_STRING
    assert api.get(f"/users/alice/recall?{query}").status == 200
    assert api.get(f"/users/alice/recall?{query}&").status == 422


def test_more_query_parameters_than_django_reads_is_a_422_not_a_500(api):
    answer = api.get("/users/alice/recall?q=x" + "&a" * settings.DATA_UPLOAD_MAX_NUMBER_FIELDS)
    assert (answer.status, answer.body["error"]["field"]) == (422, "query")


def test_a_page_refuses_a_body_over_2_5_mb_before_reading_it(client):
    """The API's 48 MiB is for its bulks; an anonymous login form gets Django's 2.5 MB."""
    answer = client.post(
        "/accounts/login/",
        data=b"username=x&password=" + b"y" * 2_621_441,
        content_type="application/x-www-form-urlencoded",
    )
    assert answer.status_code == 413
    assert client.get("/accounts/login/").status_code == 200

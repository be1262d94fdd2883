"""Authority before the body (api.md), and a body judged by its size and shape before decoding.

The key, its permission and its owner are decided from the path and headers, so a key that may not
make the request gets 403 whatever its body or query holds, never a 422; and a few megabytes of
`[0,0,…]` cost milliseconds, not seconds and gigabytes.
"""

from __future__ import annotations

import json
import time
import tracemalloc

import pytest

from deposits.models import Deposit
from tests.conftest import ApiClient, make_client

pytestmark = pytest.mark.django_db

# About a megabyte of the cheapest JSON values: half a million elements to decode and validate.
ZEROS = b'{"items": [' + b",".join([b"0"] * 500_000) + b"]}"


@pytest.fixture
def reader() -> ApiClient:
    return make_client(channel="dashboard-reader", perms=("read",))


@pytest.fixture
def confined() -> ApiClient:
    return make_client(channel="tenant-a-app", prefix="tenant-a:")


def error_of(answer, status: int, code: str) -> dict:
    assert (answer.status, answer.body["error"]["code"]) == (status, code), answer.body
    return answer.body["error"]


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/users/tenant-b:bob/deposits", {"content": 7, "polarity": "sideways"}),
        ("POST", "/users/tenant-b:bob/deposits", "not json at all"),
        ("POST", "/users/tenant-b:bob/contradict", {"contradicts": "nothing"}),
        ("POST", "/users/tenant-b:bob/beliefs/diet/observations", {"value": ["x"]}),
        ("DELETE", "/users/tenant-b:bob/deposits/not-a-uuid?mode=sideways", None),
        ("GET", "/users/tenant-b:bob/recall?limit=-4&q=", None),
        ("GET", "/users/tenant-b:bob/deposits?offset=banana", None),
        ("GET", "/users/tenant-b:bob/recall?q=a%00b", None),
    ],
)
def test_a_key_confined_elsewhere_gets_403_whatever_its_body_or_query(confined, method, path, body):
    raw = body if isinstance(body, str) else None
    answer = confined.call(method, path, None if raw else body, raw=raw)
    assert "tenant-a:" in error_of(answer, 403, "forbidden")["message"]


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/users/alice/deposits", {"content": 7, "polarity": "sideways"}),
        ("POST", "/users/alice/deposits/bulk", {"items": "many"}),
        ("POST", "/users/alice/contradict", {"contradicts": []}),
        ("DELETE", "/users/alice/deposits/not-a-uuid?reason=" + "r" * 5000, None),
    ],
)
def test_a_read_only_key_that_writes_gets_403_whatever_its_body_or_query(reader, method, path, body):
    answer = reader.call(method, path, body)
    assert "'write'" in error_of(answer, 403, "forbidden")["message"]


def test_a_read_only_key_erasing_gets_403_naming_the_erase_permission(reader):
    answer = reader.delete("/users/alice/deposits/not-a-uuid?mode=hard&reason=%00")
    assert "'erase'" in error_of(answer, 403, "forbidden")["message"]


def test_a_deployment_wide_read_by_a_confined_key_is_403_whatever_its_query(confined):
    error_of(confined.get("/jobs?limit=banana"), 403, "forbidden")
    error_of(confined.get("/calibration?x=%00"), 403, "forbidden")


@pytest.mark.parametrize("who", ["reader", "confined"])
def test_a_megabyte_of_zeros_to_a_bulk_the_key_may_not_write_is_403_at_once(request, who):
    client = request.getfixturevalue(who)
    user = "tenant-b:bob" if who == "confined" else "alice"
    tracemalloc.start()
    started = time.monotonic()
    answer = client.post(f"/users/{user}/deposits/bulk", raw=ZEROS)
    took = time.monotonic() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    error_of(answer, 403, "forbidden")
    assert took < 0.5, f"{took:.2f} s"
    # The body itself is a megabyte (the test client holds it twice); decoding it would be 50.
    assert peak < 8 * 2**20, f"{peak / 2**20:.1f} MiB"


def test_a_megabyte_of_zeros_from_a_writer_is_refused_by_its_shape_before_it_is_decoded(api):
    tracemalloc.start()
    started = time.monotonic()
    answer = api.post("/users/alice/deposits/bulk", raw=ZEROS)
    took = time.monotonic() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    error = error_of(answer, 422, "validation_error")
    assert error["field"] == "body" and "500,000" in error["message"], error
    assert took < 0.5, f"{took:.2f} s"
    assert peak < 8 * 2**20, f"{peak / 2**20:.1f} MiB"
    assert not Deposit.objects.exists()


def test_a_list_of_many_bad_values_in_a_single_claim_is_refused_cheaply(api):
    """A tag list of 900 wrong values is refused at the first, not described whole.

    It is within the body's shape, so validation runs; it stops at the first wrong value.
    """
    body = {"content": "likes tea", "tags": [0] * 900}
    api.post("/users/alice/deposits", body)  # what the first request of a process loads, loaded
    tracemalloc.start()
    answer = api.post("/users/alice/deposits", body)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert error_of(answer, 422, "validation_error")["field"].startswith("tags")
    assert peak < 512 * 1024, f"{peak / 1024:.0f} KiB"


def test_commas_inside_strings_do_not_count_against_the_shape(api):
    content = "tea, coffee, " * 600  # 1,200 commas in one string; a single claim reads 1,000 values
    answer = api.post("/users/alice/deposits", {"content": content.strip(" ,")})
    assert answer.status == 201, answer.body


def test_the_largest_legal_single_claim_shape_is_read(api):
    """Every list at its limit: 32 tags, 32 artifact refs."""
    body = {
        "content": "prefers oat milk",
        "tags": [f"t{i}" for i in range(32)],
        "artifact_refs": [f"ref:{i}" for i in range(32)],
        "scope": {
            "model": "m",
            "dataset": "d",
            "env": "prod",
            "version": "1",
            "n": 1,
            "seed": 2,
            "note": "x",
        },
    }
    assert api.post("/users/alice/deposits", body).status == 201


def test_a_bulk_too_wide_for_its_shape_names_the_count_and_the_limit(api):
    items = [{"content": "x", "idempotency_key": f"k{i}", "tags": ["a"] * 300} for i in range(700)]
    error = error_of(api.post("/users/alice/deposits/bulk", {"items": items}), 422, "validation_error")
    assert "200,000" in error["message"], error


def test_a_body_over_a_single_claims_limit_is_413_naming_that_limit(api):
    body = json.dumps({"content": "x" * (1024 * 1024)})
    error = error_of(api.post("/users/alice/deposits", raw=body), 413, "payload_too_large")
    assert error["limit"] == 1024 * 1024


def test_a_body_the_server_left_unread_is_never_taken_for_an_empty_one(api):
    """A body the server left unread is never taken for an empty one.

    The server refused the request before its body (the database was down) and did not read it; when
    the application then admits it, the client is told to send it again, not 422.
    """
    response = api.client.post(
        "/api/v1/users/alice/deposits",
        data=b"",
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {api.secret}",
        CONTENT_LENGTH="40",
        **{"atlaso.body_unread": True},
    )
    assert (response.status_code, response.json()["error"]["code"]) == (503, "unavailable")
    assert response["Retry-After"] == "1"
    assert not Deposit.objects.exists()


@pytest.mark.parametrize(
    "path", ["/users/alice/recall?q=tea&limit=3&limit=5", "/users/alice/deposits?offset=1&offset=x"]
)
def test_a_query_parameter_given_twice_with_different_values_is_refused_naming_it(api, path):
    """No query parameter of the API takes several values.

    A repeat would silently be read as its last: schemathesis found `days` sent as [junk, …, "3"]
    read as 3.
    """
    error = error_of(api.get(path), 422, "validation_error")
    assert error["field"] in {"limit", "offset"} and "more than once" in error["message"]


def test_the_same_value_given_twice_is_read_once(api):
    assert api.get("/users/alice/recall?q=tea&limit=3&limit=3").status == 200

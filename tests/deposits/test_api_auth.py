"""Who may call the deposit API: keys, permissions, and owner prefixes."""

from __future__ import annotations

import uuid

import pytest

from atlaso_site.access.models import ApiKey
from beliefs.services import api_key_revoke
from deposits.models import Deposit
from tests.conftest import ApiClient, make_client

UNAUTHORIZED = {
    "kind": "error",
    "error": {
        "code": "unauthorized",
        "message": "a valid, unrevoked API key is required: send Authorization: Bearer <api key>",
    },
}


def unauthorized(answer) -> dict:
    """UNAUTHORIZED with this answer's own request id (each request has its own)."""
    request_id = answer.headers["X-Request-ID"]
    return {**UNAUTHORIZED, "error": {**UNAUTHORIZED["error"], "request_id": request_id}}


def without_request_id(body: dict) -> dict:
    return {**body, "error": {k: v for k, v in body["error"].items() if k != "request_id"}}


def every_operation(deposit_id: str, user: str = "alice") -> list[tuple[str, str, dict | None]]:
    return [
        ("POST", f"/users/{user}/deposits", {"content": "x"}),
        ("POST", f"/users/{user}/deposits/bulk", {"items": [{"content": "x", "idempotency_key": "k"}]}),
        ("POST", f"/users/{user}/contradict", {"content": "x", "contradicts": [deposit_id], "reason": "r"}),
        ("GET", f"/users/{user}/deposits", None),
        ("GET", f"/users/{user}/deposits/{deposit_id}", None),
        ("DELETE", f"/users/{user}/deposits/{deposit_id}", None),
    ]


@pytest.mark.parametrize("secret", [None, "atl_not-a-real-key", "", "x" * 500])
def test_it_answers_401_without_a_valid_key_on_every_operation(api, secret):
    deposit = api.post("/users/alice/deposits", {"content": "likes tea"}).body["deposit"]["id"]
    stranger = ApiClient(secret)
    for method, path, body in every_operation(deposit):
        answer = stranger.call(method, path, body)
        assert (answer.status, answer.body) == (401, unauthorized(answer)), (method, path)
    assert Deposit.objects.get().retracted_at is None


def test_it_answers_401_to_a_malformed_authorization_header(api):
    for header in ("Token abc", "Bearer", "Basic dXNlcjpwYXNz"):
        answer = ApiClient(None).get("/users/alice/deposits", headers={"Authorization": header})
        assert (answer.status, answer.body) == (401, unauthorized(answer))


def test_a_revoked_key_answers_401(api):
    assert api.get("/users/alice/deposits").status == 200
    api_key_revoke(key=ApiKey.objects.get(name="test agent-a"))
    answer = api.get("/users/alice/deposits")
    assert (answer.status, answer.body) == (401, unauthorized(answer))


def test_a_read_only_key_may_not_write_or_retract(api):
    deposit = api.post("/users/alice/deposits", {"content": "likes tea"}).body["deposit"]["id"]
    reader = make_client(channel="reader", perms=("read",))
    for method, path, body in every_operation(deposit):
        if method == "GET":
            continue
        answer = reader.call(method, path, body)
        assert answer.status == 403, (method, path)
        assert answer.body["error"]["code"] == "forbidden"
        assert "'write'" in answer.body["error"]["message"]
    assert Deposit.objects.count() == 1
    assert Deposit.objects.get().retracted_at is None


def test_a_write_only_key_may_not_read(db):
    writer = make_client(channel="writer", perms=("write",))
    assert writer.post("/users/alice/deposits", {"content": "x"}).status == 201
    answer = writer.get("/users/alice/deposits")
    assert answer.status == 403
    assert answer.body["error"]["code"] == "forbidden"


def test_a_confined_key_learns_nothing_about_owners_outside_its_prefix(api):
    confined = make_client(channel="tenant-a-agent", perms=("read", "write", "erase"), prefix="tenant-a:")
    existing = api.post("/users/tenant-b:x/deposits", {"content": "b's secret"}).body["deposit"]["id"]
    with_data = every_operation(existing, user="tenant-b:x")
    without_data = every_operation(str(uuid.uuid4()), user="tenant-b:nobody")
    for (method, path, body), (_, empty_path, empty_body) in zip(with_data, without_data, strict=True):
        answer = confined.call(method, path, body)
        empty = confined.call(method, empty_path, empty_body)
        assert answer.status == empty.status == 403, (method, path)
        assert without_request_id(answer.body) == without_request_id(empty.body)
        assert answer.body["error"]["code"] == "forbidden"
        assert "b's secret" not in str(answer.body)
    hard = confined.delete(f"/users/tenant-b:x/deposits/{existing}?mode=hard")
    assert hard.status == 403
    assert Deposit.objects.filter(user_id="tenant-b:x").count() == 1
    assert Deposit.objects.get(pk=existing).retracted_at is None


def test_a_confined_key_works_inside_its_prefix(db):
    confined = make_client(channel="tenant-a-agent", prefix="tenant-a:")
    added = confined.post("/users/tenant-a:x/deposits", {"content": "likes tea"})
    assert added.status == 201
    deposit = added.body["deposit"]["id"]
    listed = confined.get("/users/tenant-a:x/deposits")
    assert (listed.status, listed.body["total"]) == (200, 1)
    assert confined.get(f"/users/tenant-a:x/deposits/{deposit}").status == 200
    assert confined.delete(f"/users/tenant-a:x/deposits/{deposit}").status == 200


def test_a_confined_key_cannot_reach_an_owner_that_merely_contains_its_prefix(db):
    confined = make_client(channel="tenant-a-agent", prefix="tenant-a:")
    assert confined.get("/users/xtenant-a:x/deposits").status == 403
    assert confined.post("/users/tenant-a/deposits", {"content": "x"}).status == 403

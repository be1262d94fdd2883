"""Authentication and the owner check come before everything else (api.md).

A key confined elsewhere gets 403 whatever the method, and a deployment-wide read is no confined
key's.
"""

from __future__ import annotations

import uuid

import pytest

from tests.conftest import ApiClient, make_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def tenant_b() -> ApiClient:
    return make_client(channel="tenant-b-app", prefix="tenant-b:")


@pytest.fixture
def tenant_a() -> ApiClient:
    return make_client(channel="tenant-a-app", prefix="tenant-a:")


def error_of(answer, status: int, code: str) -> None:
    assert (answer.status, answer.body["kind"], answer.body["error"]["code"]) == (status, "error", code), (
        answer.body
    )


@pytest.mark.parametrize("method", ["PUT", "PATCH"])
def test_a_key_confined_elsewhere_that_updates_a_deposit_gets_403_not_405(tenant_a, tenant_b, method):
    deposit = tenant_b.post("/users/tenant-b:bob/deposits", {"content": "likes tea"}).body["deposit"]["id"]
    answer = tenant_a.call(method, f"/users/tenant-b:bob/deposits/{deposit}", {"content": "likes coffee"})
    error_of(answer, 403, "forbidden")
    assert "tenant-a:" in answer.body["error"]["message"]
    assert tenant_b.get(f"/users/tenant-b:bob/deposits/{deposit}").body["content"] == "likes tea"


@pytest.mark.parametrize("method", ["PUT", "PATCH"])
def test_the_403_does_not_say_whether_the_deposit_or_its_owner_exists(tenant_a, method):
    answer = tenant_a.call(method, f"/users/tenant-b:nobody/deposits/{uuid.uuid4()}", {"content": "x"})
    error_of(answer, 403, "forbidden")


@pytest.mark.parametrize("method", ["PUT", "PATCH"])
def test_a_key_on_its_own_tenant_still_learns_that_deposits_are_immutable(tenant_a, method):
    deposit = tenant_a.post("/users/tenant-a:al/deposits", {"content": "likes tea"}).body["deposit"]["id"]
    answer = tenant_a.call(method, f"/users/tenant-a:al/deposits/{deposit}", {"content": "likes coffee"})
    error_of(answer, 405, "immutable")
    assert "contradict" in answer.body["error"]["message"]


def test_a_read_only_key_that_tries_an_update_is_refused_for_lacking_write(db):
    reader = make_client(channel="reader", perms=("read",))
    answer = reader.call("PUT", f"/users/alice/deposits/{uuid.uuid4()}", {"content": "x"})
    error_of(answer, 403, "forbidden")
    assert "'write'" in answer.body["error"]["message"]


def test_an_update_without_a_key_is_still_401(db):
    error_of(ApiClient(None).call("PATCH", f"/users/alice/deposits/{uuid.uuid4()}", {}), 401, "unauthorized")


def test_calibration_pools_every_owner_so_a_confined_key_gets_403(tenant_a):
    answer = tenant_a.get("/calibration")
    error_of(answer, 403, "forbidden")
    assert "confined" in answer.body["error"]["message"]


def test_calibration_answers_an_unconfined_read_key(api):
    answer = api.get("/calibration")
    assert (answer.status, answer.body["kind"]) == (200, "calibration")


def test_calibration_still_needs_the_read_permission(db):
    writer = make_client(channel="writer-only", perms=("write",))
    error_of(writer.get("/calibration"), 403, "forbidden")

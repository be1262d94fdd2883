"""Found by the reliability and security probe: each answer a client can rely on."""

from __future__ import annotations

import pytest

from tests.conftest import ApiClient, make_client

pytestmark = pytest.mark.django_db


def test_an_update_without_a_key_is_401_before_anything_else(db):
    anonymous = ApiClient(None)
    answer = anonymous.call(
        "PUT", "/users/alice/deposits/00000000-0000-0000-0000-000000000000", {"content": "x"}
    )
    assert (answer.status, answer.body["error"]["code"]) == (401, "unauthorized")


def test_an_empty_idempotency_key_in_the_body_is_refused_not_ignored(api):
    answer = api.post("/users/alice/deposits", {"content": "a", "idempotency_key": ""})
    assert (answer.status, answer.body["error"]["field"]) == (422, "idempotency_key")
    assert api.get("/users/alice/deposits").body["total"] == 0


@pytest.mark.parametrize(
    "path", ["/users/alice/beliefs/a%00b", "/users/alice/beliefs/a%00b/revisions", "/users/a%00b/deposits"]
)
def test_nul_in_a_path_parameter_is_a_422(api, path):
    answer = api.get(path)
    assert (answer.status, answer.body["error"]["code"], answer.body["error"]["field"]) == (
        422,
        "validation_error",
        "path",
    )


def test_nul_in_a_tier_name_is_a_422(db):
    admin = make_client(channel="ops", perms=("read", "admin"))
    assert admin.call("PUT", "/tiers/a%00b", {"ceiling": 0.5}).status == 422


def test_a_confined_admin_key_cannot_change_global_provenance(db):
    confined = make_client(channel="tenant-a-ops", perms=("read", "admin"), prefix="tenant-a:")
    tier = confined.call("PUT", "/tiers/web_fetch", {"ceiling": 0.25})
    channel = confined.post("/channels", {"name": "sneaky", "tier": "user_edit"})
    assert (tier.status, channel.status) == (403, 403)
    assert tier.body["error"]["code"] == "forbidden"
    unconfined = make_client(channel="ops", perms=("read", "admin"))
    assert unconfined.call("PUT", "/tiers/web_fetch", {"ceiling": 0.25}).status == 200


def test_a_confined_key_sees_only_its_own_channel_in_the_tier_list(db):
    make_client(channel="tenant-b-agent", prefix="tenant-b:")
    confined = make_client(channel="tenant-a-agent", prefix="tenant-a:")
    shown = {name for tier in confined.get("/tiers").body["items"] for name in tier["channels"]}
    assert shown == {"tenant-a-agent"}
    everyone = make_client(channel="ops", perms=("read",))
    seen = {name for tier in everyone.get("/tiers").body["items"] for name in tier["channels"]}
    assert {"tenant-a-agent", "tenant-b-agent", "ops"} <= seen

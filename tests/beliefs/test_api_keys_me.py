"""`GET /api/v1/keys/me`: the calling key as the server knows it, for any valid key, never its secret."""

from __future__ import annotations

from atlaso_site.access.models import ApiKey
from tests.conftest import ApiClient, make_client


def test_it_describes_the_calling_key(db):
    client = make_client(channel="notes-bot", tier="agent_own", perms=("read", "write"), prefix="tenant-a:")
    answer = client.get("/keys/me")
    assert answer.status == 200
    key = ApiKey.objects.get()
    assert answer.body == {
        "kind": "api_key",
        "name": "test notes-bot",
        "channel": "notes-bot",
        "tier": "agent_own",
        "permissions": ["read", "write"],
        "user_prefix": "tenant-a:",
        "created_at": key.created_at.isoformat(timespec="microseconds"),
    }


def test_it_never_shows_the_secret_or_its_hash(db):
    client = make_client()
    raw = client.get("/keys/me").headers.content.decode()
    key = ApiKey.objects.get()
    assert client.secret not in raw
    assert key.secret_hash not in raw


def test_a_key_without_the_read_permission_may_still_ask(db):
    client = make_client(perms=("write",))
    answer = client.get("/keys/me")
    assert answer.status == 200
    assert answer.body["permissions"] == ["write"]


def test_a_missing_or_revoked_key_gets_401(db):
    assert ApiClient(None).get("/keys/me").status == 401
    client = make_client()
    ApiKey.objects.update(revoked_at="2026-01-01T00:00:00Z")
    answer = client.get("/keys/me")
    assert answer.status == 401
    assert answer.body["error"]["code"] == "unauthorized"

"""The API key lookup every request makes: the rows the ORM would read, converted the same way."""

from __future__ import annotations

import pytest
from django.utils import timezone

from atlaso_site.access.api_keys import key_by_secret_hash
from atlaso_site.access.models import ApiKey
from atlaso_site.lib.secrets import hash_secret
from beliefs.services import api_key_create, api_key_revoke

pytestmark = pytest.mark.django_db


def fields(instance) -> dict[str, object]:
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


def test_it_reads_the_key_its_channel_and_its_tier_as_the_orm_does():
    _, secret = api_key_create(
        name="agent", channel_name="agent-notes", permissions=["read", "write"], user_prefix="tenant-a:"
    )
    ApiKey.objects.update(last_used_at=timezone.now())
    found = key_by_secret_hash(hash_secret(secret))
    expected = ApiKey.objects.select_related("channel__tier").get(secret_hash=hash_secret(secret))
    assert fields(found) == fields(expected)
    assert fields(found.channel) == fields(expected.channel)
    assert fields(found.channel.tier) == fields(expected.channel.tier)
    assert found.permissions == ["read", "write"] and found.last_used_at.tzinfo is not None
    assert isinstance(found.channel.tier.ceiling, float)


def test_an_unknown_secret_finds_nothing_and_a_revoked_key_says_so():
    key, secret = api_key_create(name="agent", channel_name="agent-notes", permissions=["read"])
    assert key_by_secret_hash(hash_secret("not-a-key")) is None
    api_key_revoke(key=key)
    assert key_by_secret_hash(hash_secret(secret)).is_revoked

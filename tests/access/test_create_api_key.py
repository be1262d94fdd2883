"""`manage.py create_api_key`: the secret alone on stdout's last line, a key that works."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from atlaso_site.access.models import ApiKey, Channel
from tests.conftest import ApiClient


def create(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("create_api_key", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_it_prints_the_secret_alone_on_stdouts_last_line_and_the_key_works(db):
    out, err = create("--name", "ci", "--channel", "ci-bot")
    secret = out.splitlines()[-1]
    assert secret.startswith("atl_") and " " not in secret
    assert secret not in err
    client = ApiClient(secret)
    assert client.post("/users/alice/deposits", {"content": "likes tea"}).status == 201
    assert client.get("/users/alice/deposits").body["total"] == 1


def test_it_stores_only_a_hash_of_the_secret(db):
    out, _ = create("--name", "ci", "--channel", "ci-bot")
    secret = out.splitlines()[-1]
    key = ApiKey.objects.get()
    assert secret not in (key.secret_hash, key.display_prefix)
    assert secret.startswith(key.display_prefix)


def test_without_perm_a_key_may_read_and_write_but_not_erase(db):
    secret = create("--name", "ci", "--channel", "ci-bot")[0].splitlines()[-1]
    client = ApiClient(secret)
    deposit = client.post("/users/alice/deposits", {"content": "likes tea"}).body["deposit"]["id"]
    assert client.get(f"/users/alice/deposits/{deposit}").status == 200
    assert client.delete(f"/users/alice/deposits/{deposit}?mode=hard").status == 403
    assert sorted(ApiKey.objects.get().permissions) == ["read", "write"]


def test_named_perms_replace_the_default(db):
    secret = create("--name", "ro", "--channel", "ci-bot", "--perm", "read")[0].splitlines()[-1]
    client = ApiClient(secret)
    assert client.get("/users/alice/deposits").status == 200
    assert client.post("/users/alice/deposits", {"content": "x"}).status == 403


def test_a_user_prefix_confines_the_key(db):
    secret = create("--name", "t", "--channel", "ci-bot", "--user-prefix", "tenant-a:")[0].splitlines()[-1]
    client = ApiClient(secret)
    assert client.get("/users/tenant-a:x/deposits").status == 200
    assert client.get("/users/tenant-b:x/deposits").status == 403


def test_a_new_channel_defaults_to_the_untrusted_tier(db):
    create("--name", "ci", "--channel", "fresh-channel")
    assert Channel.objects.get(name="fresh-channel").tier.name == "untrusted"


def test_a_new_channel_takes_the_tier_named(db):
    create("--name", "ci", "--channel", "tools", "--tier", "tool_output")
    assert Channel.objects.get(name="tools").tier.name == "tool_output"


def test_an_existing_channel_keeps_its_tier_when_none_or_the_same_is_named(db):
    create("--name", "one", "--channel", "tools", "--tier", "tool_output")
    create("--name", "two", "--channel", "tools")
    create("--name", "three", "--channel", "tools", "--tier", "tool_output")
    assert Channel.objects.get(name="tools").tier.name == "tool_output"
    assert ApiKey.objects.filter(channel__name="tools").count() == 3


def test_naming_another_tier_for_an_existing_channel_is_an_error(db):
    create("--name", "one", "--channel", "tools", "--tier", "tool_output")
    with pytest.raises(CommandError, match="bound to tier 'tool_output'"):
        create("--name", "two", "--channel", "tools", "--tier", "user_direct")
    assert Channel.objects.get(name="tools").tier.name == "tool_output"
    assert ApiKey.objects.count() == 1


def test_an_unknown_tier_is_an_error_that_lists_the_tiers(db):
    with pytest.raises(CommandError, match="untrusted"):
        create("--name", "one", "--channel", "new", "--tier", "gold")
    assert not Channel.objects.filter(name="new").exists()

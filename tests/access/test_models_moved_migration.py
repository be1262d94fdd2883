"""Migrations access 0001 and beliefs 0010: tiers, channels and keys move to access, every row kept."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from atlaso_site.lib.secrets import hash_secret
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

BEFORE = [("beliefs", "0009_observation_keys"), ("access", None)]
AFTER = [("access", "0001_initial"), ("beliefs", "0010_access_models_moved")]
SECRET = "atl_made-before-the-move-0123456789"
MODELS = ("ProvenanceTier", "Channel", "ApiKey")


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    ContentType.objects.clear_cache()
    # The state at the targets (an app migrated back to nothing adds none).
    nodes = [target for target in targets if target[1] is not None]
    return MigrationExecutor(connection).loader.project_state(nodes).apps


def rows(apps, label: str) -> dict[str, list[dict[str, object]]]:
    """Every row of the three tables, as the models of `label` read them, in id order."""
    return {name: list(apps.get_model(label, name).objects.order_by("pk").values()) for name in MODELS}


def test_tiers_channels_and_keys_keep_every_row_and_a_key_made_before_still_works():
    old = migrate(BEFORE)
    try:
        Tier = old.get_model("beliefs", "ProvenanceTier")
        Channel = old.get_model("beliefs", "Channel")
        ApiKey = old.get_model("beliefs", "ApiKey")
        scraper = Tier.objects.create(name="scraper", ceiling=0.2, description="a crawler we run")
        bot = Channel.objects.create(name="ci-bot", tier=Tier.objects.get(name="agent_own"))
        crawler = Channel.objects.create(name="crawler", tier=scraper, description="nightly")
        used = timezone.now() - timedelta(hours=3)
        ApiKey.objects.create(
            name="ci", channel=bot, secret_hash=hash_secret(SECRET), display_prefix=SECRET[:12],
            permissions=["read", "write"], user_prefix="tenant-a:", last_used_at=used,
        )  # fmt: skip
        ApiKey.objects.create(
            name="old crawler", channel=crawler, secret_hash=hash_secret("atl_revoked"),
            display_prefix="atl_revoked", permissions=["read"], revoked_at=used,
        )  # fmt: skip
        before = rows(old, "beliefs")
        # An operator allowed to revoke keys in the admin, by the permission on the key's model.
        Permission = old.get_model("auth", "Permission")
        Group = old.get_model("auth", "Group")
        keepers = Group.objects.create(name="key keepers")
        keepers.permissions.add(
            Permission.objects.get(content_type__app_label="beliefs", codename="change_apikey")
        )

        new = migrate(AFTER)

        assert rows(new, "access") == before
        assert [len(before[name]) for name in MODELS] == [9, 3, 2]  # with the defaults of beliefs 0002
        assert new.get_model("access", "ApiKey").objects.get(name="ci").channel.tier.name == "agent_own"
        answer = ApiClient(SECRET).get("/keys/me")
        assert answer.status == 200
        seen = {field: answer.body[field] for field in ("name", "channel", "tier", "user_prefix")}
        assert seen == {"name": "ci", "channel": "ci-bot", "tier": "agent_own", "user_prefix": "tenant-a:"}
        assert ApiClient("atl_revoked").get("/keys/me").status == 401
        operator = get_user_model().objects.create_user("keeper", password="x" * 12)
        operator.groups.add(keepers.pk)
        assert operator.has_perm("access.change_apikey")
        assert not ContentType.objects.filter(app_label="beliefs", model__in=["apikey", "channel"]).exists()

        # And back: beliefs claims the models again, rows and permission with them.
        old = migrate(BEFORE)
        assert rows(old, "beliefs") == rows(new, "access")
        assert Permission.objects.filter(
            content_type__app_label="beliefs", codename="change_apikey", group__name="key keepers"
        ).exists()
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
        ContentType.objects.clear_cache()


def test_the_models_and_the_migrations_agree():
    out = StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()

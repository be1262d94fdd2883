"""`ensure_demo_key`: one API key for trying the client, made once, and the lines that export it."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from atlaso_site.access.models import ApiKey, Channel
from atlaso_site.lib.secrets import hash_secret
from beliefs.services import api_key_create

DEMO_KEY_NAME = "demo agent"
DEMO_CHANNEL = "demo-agent"
DEMO_TIER = "agent_own"


class Command(BaseCommand):
    help = (
        "Make the demo API key once (its secret kept in var/demo-api-key) and print the export "
        "lines that point the atlaso client at this server."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--base-url", default="http://127.0.0.1:8000", help="the URL the server is reached at"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        key_file = settings.VAR_DIR / "demo-api-key"
        secret = key_file.read_text().strip() if key_file.exists() else ""
        # A kept secret counts only while its key exists and works: a fresh database, or a
        # revocation in the dashboard, gets a new key rather than an export that answers 401.
        usable = (
            bool(secret)
            and ApiKey.objects.filter(secret_hash=hash_secret(secret), revoked_at__isnull=True).exists()
        )
        if not usable:
            _, secret = api_key_create(
                name=DEMO_KEY_NAME,
                channel_name=DEMO_CHANNEL,
                # An operator may have rebound the channel since: keep their tier.
                tier_name=None if Channel.objects.filter(name=DEMO_CHANNEL).exists() else DEMO_TIER,
                permissions=("read", "write"),
                actor="make run",
            )
            key_file.parent.mkdir(parents=True, exist_ok=True)
            key_file.touch(mode=0o600)
            key_file.write_text(secret + "\n")
            key_file.chmod(0o600)
        self.stdout.write(
            f"API key for agents and the atlaso client (read, write; kept in {key_file}):\n"
            f"  export ATLASO_BASE_URL={options['base_url']} ATLASO_API_KEY={secret}"
        )

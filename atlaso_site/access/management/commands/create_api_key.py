"""`create_api_key`: make an API key and print its secret alone on the last line."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from atlaso_site.access.models import PERMISSIONS
from beliefs.services import ProvenanceError, api_key_create


class Command(BaseCommand):
    help = "Create an API key on a channel; the secret is printed once, on stdout's last line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", required=True, help="what the key is for")
        parser.add_argument("--channel", required=True, help="channel the key writes on")
        parser.add_argument(
            "--tier", help="tier for a new channel (default untrusted); must match an existing one"
        )
        parser.add_argument(
            "--perm",
            action="append",
            choices=PERMISSIONS,
            default=[],
            help="a permission (repeat); without any, the key gets read and write",
        )
        parser.add_argument(
            "--user-prefix", default="", help="confine the key to user_ids starting with this"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            key, secret = api_key_create(
                name=options["name"],
                channel_name=options["channel"],
                tier_name=options["tier"],
                permissions=options["perm"],
                user_prefix=options["user_prefix"],
                actor="command",
            )
        except ProvenanceError as error:
            raise CommandError(str(error)) from error
        self.stderr.write(
            f"Created key {key.name!r} on channel {key.channel.name!r} "
            f"(tier {key.channel.tier.name}, permissions {', '.join(key.permissions)}"
            + (f", confined to {key.user_prefix!r}" if key.user_prefix else "")
            + "). Keep the secret now; it is not stored and will not be shown again."
        )
        self.stdout.write(secret)

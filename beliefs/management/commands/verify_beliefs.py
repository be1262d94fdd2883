"""`verify_beliefs`: report any stored belief state that differs from the replay of its log."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from beliefs.services import beliefs_verify


class Command(BaseCommand):
    help = "Compare every stored belief with the replay of its log; exit 1 when any differs."

    def handle(self, *args: Any, **options: Any) -> None:
        differing = beliefs_verify()
        for user_id, key in differing:
            self.stdout.write(f"DIFFERS {user_id} {key}")
        if differing:
            raise CommandError(f"{len(differing)} belief(s) differ from their log; run rebuild_beliefs")
        self.stdout.write("Every stored belief equals the replay of its log.")

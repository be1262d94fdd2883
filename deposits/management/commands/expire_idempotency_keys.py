"""`expire_idempotency_keys`: the hourly job, by hand."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from deposits.services import idempotency_expire


class Command(BaseCommand):
    help = "Delete idempotency entries older than 24 hours (reads already ignore them)."

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(f"Deleted {idempotency_expire()} expired idempotency entries.")

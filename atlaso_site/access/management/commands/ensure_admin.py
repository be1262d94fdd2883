"""`ensure_admin`: an `admin` login for the dashboard, with a random password printed once."""

from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Create the admin superuser with a random password (kept in var/admin-password.txt)."

    def handle(self, *args: Any, **options: Any) -> None:
        users = get_user_model()
        password_file = settings.VAR_DIR / "admin-password.txt"
        if users.objects.filter(username="admin").exists():
            self.stdout.write(f"Login: admin (password in {password_file})")
            return
        password = secrets.token_urlsafe(12)
        users.objects.create_superuser("admin", "", password)
        password_file.parent.mkdir(parents=True, exist_ok=True)
        password_file.write_text(password + "\n")
        password_file.chmod(0o600)
        self.stdout.write(f"Created login admin / {password}  (kept in {password_file})")

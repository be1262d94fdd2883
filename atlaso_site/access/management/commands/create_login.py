"""`create_login`: a dashboard login with the reviewer or operator role, or a new password and role."""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from atlaso_site.access.logins import login_save
from atlaso_site.access.roles import ROLES


class Command(BaseCommand):
    help = (
        "Create a dashboard login with a role, or give an existing one a new password and role. "
        "The password is read from --password-file, else asked for (twice, not echoed)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="the username to log in with")
        parser.add_argument("--role", required=True, choices=ROLES, help="what the login may do")
        parser.add_argument(
            "--password-file",
            type=Path,
            help="a file whose first line is the password (kept out of the shell history)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        name: str = options["name"]
        role: str = options["role"]
        password = self._password(options["password_file"])
        if not password:
            raise CommandError("The password is empty; give one of at least 8 characters.")
        try:
            _user, created = login_save(username=name, role=role, password=password)
        except ValidationError as error:
            raise CommandError(" ".join(error.messages)) from None
        if created:
            self.stdout.write(f"Created login {name} ({role}); log in at /accounts/login/")
        else:
            self.stdout.write(f"Updated login {name}: new password, role {role}")

    def _password(self, path: Path | None) -> str:
        if path is not None:
            try:
                lines = path.read_text().splitlines()
            except OSError as error:
                raise CommandError(f"Cannot read the password file {path}: {error.strerror}") from None
            return lines[0] if lines else ""
        try:
            first = getpass.getpass("Password: ")
            if not first:
                return ""
            again = getpass.getpass("Password (again): ")
        except EOFError:
            raise CommandError("No password given: type one at the prompt or use --password-file.") from None
        if first != again:
            raise CommandError("The two passwords differ; nothing was changed.")
        return first

#!/usr/bin/env python
"""Django's command-line utility for Atlaso."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def use_the_secret_key_make_run_keeps() -> None:
    """Name the secret key file `make run` keeps (var/secret-key) when no secret key is given.

    A command run beside `make run` (`create_api_key`, `create_login`) must sign with the key the
    server uses, and the operator typing it should not have to say where that key is. The file
    is the one the Makefile makes: under ATLASO_VAR_DIR when set, else var/ beside this file.
    """
    if os.environ.get("SECRET_KEY") or os.environ.get("SECRET_KEY_FILE"):
        return
    var_dir = Path(os.environ.get("ATLASO_VAR_DIR") or Path(__file__).resolve().parent / "var")
    key_file = var_dir / "secret-key"
    if key_file.is_file():
        os.environ["SECRET_KEY_FILE"] = str(key_file)


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "atlaso_site.settings")
    use_the_secret_key_make_run_keeps()
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        settings.SECRET_KEY  # noqa: B018 (reads the settings, which validate the environment)
    except ImproperlyConfigured as error:
        # A setting the environment got wrong is the operator's to fix, in one line, not a
        # traceback through Django's start-up.
        sys.exit(f"manage.py: {error}")
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()

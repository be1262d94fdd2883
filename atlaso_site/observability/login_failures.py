"""Failed logins, counted from Django's `user_login_failed`.

Sent for the dashboard's and the admin's login forms; django-axes sends it too for an attempt it
refuses while locked out.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.signals import user_login_failed

from atlaso_site.observability.metrics import LOGIN_FAILURES


def count_login_failure(sender: Any = None, **kwargs: Any) -> None:
    LOGIN_FAILURES.inc()


def connect() -> None:
    user_login_failed.connect(count_login_failure, dispatch_uid="atlaso_login_failures")

"""The frame's navigation and the context every page's frame reads: its links and the user's roles.

The roles themselves, and the checks every view makes, are `atlaso_site.access.roles`; this
module only decides what the frame shows.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest
from django.urls import reverse

from atlaso_site.access.roles import OPERATOR, REVIEWER, is_operator, is_reviewer, roles_of

# The frame's navigation: (label, url name, role needed). Their paths are fixed (/, /owners/,
# /conflicts/, /conflicts/next/, /health/, /jobs/, /provenance/): outside browser tests are written against them.
NAVIGATION = (
    ("Overview", "diagnostics:overview", REVIEWER),
    ("Owners", "diagnostics:owners", REVIEWER),
    ("Conflicts", "deposits:conflicts", REVIEWER),
    ("Review desk", "deposits:desk", REVIEWER),
    ("Health", "diagnostics:health", REVIEWER),
    ("Jobs", "diagnostics:jobs", REVIEWER),
    ("Provenance", "beliefs:provenance", OPERATOR),
)


def dashboard(request: HttpRequest) -> dict[str, Any]:
    """Context processor: `is_reviewer`, `is_operator` and the frame's `navigation`.

    Each is a callable, so a template that never uses them (the admin, an error page) costs
    no query; a template that does reads the user's groups once. A page drawn before the
    authentication middleware ran (the 400 for an unknown Host) has no user: it is anonymous.
    """
    user = getattr(request, "user", None) or AnonymousUser()

    def navigation() -> list[dict[str, Any]]:
        held = roles_of(user)
        items = [
            {"label": label, "path": reverse(name), "current": False}
            for label, name, role in NAVIGATION
            if role in held
        ]
        # The current page is the item whose path is the longest prefix of the request's
        # (the desk, /conflicts/next/, is not also the queue, /conflicts/).
        matching = [
            item
            for item in items
            if (
                request.path == item["path"] if item["path"] == "/" else request.path.startswith(item["path"])
            )
        ]
        if matching:
            max(matching, key=lambda item: len(item["path"]))["current"] = True
        return items

    return {
        "is_reviewer": lambda: is_reviewer(user),
        "is_operator": lambda: is_operator(user),
        "navigation": navigation,
    }

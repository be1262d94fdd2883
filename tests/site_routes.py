"""The site's routes outside the API, read from its urlconf and admin, for tests that walk every page."""

from __future__ import annotations

import re
from collections.abc import Iterator

from django.apps import apps
from django.contrib import admin
from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.resolvers import RoutePattern

from atlaso_site.admission import API_PREFIX

# A valid value of each path converter.
SAMPLES = {"str": "alice", "path": "1", "int": "1", "uuid": "00000000-0000-4000-8000-000000000001"}
_PARAMETER = re.compile(r"<(?:(?P<converter>\w+):)?(?P<name>\w+)>")


def _routes(patterns: list, prefix: str = "") -> Iterator[str]:
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if route.startswith(API_PREFIX.lstrip("/")):
            continue
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, route)
        elif isinstance(pattern, URLPattern) and isinstance(pattern.pattern, RoutePattern):
            yield route


#: Every routed path outside the API, as its `path()` spells it (`owners/<str:user_id>/`); the
#: admin's two regular-expression routes (an app's index, the catch-all) are left out.
ROUTES = sorted(set(_routes(get_resolver().url_patterns)))
#: The dashboard's routes and the login: every route but the admin's.
PAGES = [route for route in ROUTES if not route.startswith("admin/")]
#: The admin's changelist of every registered model.
CHANGELISTS = sorted(
    f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
    for model in apps.get_models()
    if admin.site.is_registered(model)
)


def parameters_of(route: str) -> list[str]:
    """The names of a route's path parameters, in order."""
    return [match["name"] for match in _PARAMETER.finditer(route)]


def path_of(route: str, bad: str = "", at: str | None = None) -> str:
    """The route as a path, parameter `at` holding `bad` and every other a valid sample.

    `bad` is written as sent, percent-encoded; the samples come from each converter.
    """

    def value(match: re.Match[str]) -> str:
        return bad if match["name"] == at else SAMPLES[match["converter"] or "str"]

    return "/" + _PARAMETER.sub(value, route)

"""`manage.py check` says what keeps the configured embedder from working (recall-by-meaning.md)."""

from __future__ import annotations

from typing import Any

from django.core.checks import Error, register

from deposits.embedders import configuration_problem


@register()
def embedder_configuration(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    """An embedder asked for that cannot work: recall stays by words until it is fixed."""
    problem = configuration_problem()
    if problem is None:
        return []
    return [
        Error(
            problem,
            hint="Until it is fixed, recall answers by words alone and asking for meaning answers 422 "
            "embedder_unavailable; see the README's recall by meaning settings.",
            id="atlaso.E101",
        )
    ]

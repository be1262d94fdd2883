"""The project package as an app: Celery once Django is set up, and tracing when asked for.

Tracing starts when OpenTelemetry's variables ask for it.
"""

from __future__ import annotations

from django.apps import AppConfig


class SiteConfig(AppConfig):
    name = "atlaso_site"
    label = "atlaso_site"

    def ready(self) -> None:
        # Every process that sends a task (web, commands, tests) must configure this app first,
        # or @shared_task would fall back to Celery's default app and its default broker.
        from atlaso_site import celery  # noqa: F401
        from atlaso_site.observability import login_failures
        from atlaso_site.observability.tracing import wanted

        login_failures.connect()
        if wanted():
            from atlaso_site.observability import tracing

            tracing.start()

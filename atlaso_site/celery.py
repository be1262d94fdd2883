"""The Celery app: broker and beat schedule come from settings (CELERY_*)."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "atlaso_site.settings")

app = Celery("atlaso")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

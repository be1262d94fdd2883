"""The Celery app, its broker and beat schedule from settings (CELERY_*).

Every process that loads it gets the request id, heartbeats and logging of
`atlaso_site.observability.tasks`.
"""

from __future__ import annotations

import os

from celery import Celery

from atlaso_site.observability import tasks as observed

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "atlaso_site.settings")

app = Celery("atlaso")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
app.steps["worker"].add(observed.WorkerHeartbeat)

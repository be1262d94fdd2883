"""WSGI entry point for gunicorn."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "atlaso_site.settings")
application = get_wsgi_application()

# The local embedder's weights are read in now, in each web worker, rather than by its first recall.
from deposits.embedders import warm_in_background  # noqa: E402

warm_in_background()

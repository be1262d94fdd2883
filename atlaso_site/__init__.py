"""Atlaso's project package: settings, URL wiring, the one API, Celery, and the shared kernel (lib/)."""

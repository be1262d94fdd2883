"""Atlaso's project package: settings, URL wiring, the one API, Celery, and the shared kernel (lib/)."""

# The server's version, as exports name it (pyproject.toml's).
__version__ = "0.1.0"

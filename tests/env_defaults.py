"""Test-run defaults, loaded as a plugin (-p) before pytest-django reads the settings."""

import os

os.environ.setdefault("DEBUG", "true")
os.environ.setdefault("SECRET_KEY", "test-only-secret-key")
os.environ.setdefault(
    "ATLASO_VAR_DIR", os.path.join(os.path.dirname(os.path.dirname(__file__)), "var", "test")
)

"""Test-run defaults, loaded as a plugin (-p) before pytest-django reads the settings."""

import os

os.environ.setdefault("DEBUG", "true")
os.environ.setdefault("SECRET_KEY", "test-only-secret-key")
# The suite tests the benchmark commands, so it installs their app (off by default).
os.environ.setdefault("ATLASO_BENCH", "true")
# Recall by words, as the suite pins it, unless a test asks for an embedder (tests/deposits/meaning).
os.environ.setdefault("ATLASO_EMBEDDER", "none")
os.environ.setdefault(
    "ATLASO_VAR_DIR", os.path.join(os.path.dirname(os.path.dirname(__file__)), "var", "test")
)

"""Tests that need something this machine may lack: skipped with the reason, failed under CI."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def cannot_run(reason: str, *, which: str) -> NoReturn:
    """Skip, saying what is missing; under CI=true fail instead: CI must run `which`."""
    if in_ci():
        pytest.fail(f"{reason}; CI=true requires the {which} to run", pytrace=False)
    pytest.skip(reason)

"""The dashboard pages of beliefs; the paths are fixed: outside browser tests use them."""

from __future__ import annotations

from django.urls import path  # noqa: F401

urlpatterns: list = []

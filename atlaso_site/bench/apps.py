"""The benchmarks: they import what they measure, and nothing in the product imports them."""

from __future__ import annotations

from django.apps import AppConfig


class BenchConfig(AppConfig):
    name = "atlaso_site.bench"
    label = "bench"
    verbose_name = "Benchmarks"

"""`seed_bench_vectors`: a vector of the configured model for every seeded deposit (see bench/meaning.py)."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from atlaso_site.bench.meaning import seed_vectors


class Command(BaseCommand):
    help = (
        "Give every bench-* deposit lacking one a vector of the configured model: the model's vectors of "
        "its words, summed (the seed's sentences are random words; embedding a million takes hours)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        started = time.perf_counter()
        try:
            written = seed_vectors(say=self.stdout.write)
        except RuntimeError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(f"Wrote {written:,} vectors in {time.perf_counter() - started:.1f}s.")

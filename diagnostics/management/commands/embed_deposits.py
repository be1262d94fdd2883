"""`embed_deposits [--owner ID] [--limit N]`: the embedding job, by hand (a backfill)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.management.base import CommandParser

from diagnostics.job_runner import EMBED_DEPOSITS
from diagnostics.management.job_command import JobCommand


class Command(JobCommand):
    help = (
        "Embed the deposits waiting for a vector (recall by meaning), oldest first: every owner's, or "
        "one owner's (--owner), all or at most --limit."
    )
    job = EMBED_DEPOSITS

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--owner", help="embed this owner's waiting deposits only")
        parser.add_argument("--limit", type=int, help="embed at most this many")
        parser.add_argument(
            "--threads", type=int, help="threads the local model computes with (ATLASO_EMBEDDER_THREADS)"
        )
        parser.add_argument("--batch", type=int, help="texts per batch (ATLASO_EMBEDDINGS_BATCH)")

    def params(self, options: Mapping[str, Any]) -> dict[str, Any]:
        return {
            name: options[name]
            for name in ("owner", "limit", "threads", "batch")
            if options.get(name) is not None
        }

"""`rebuild_beliefs [--channel C …]`: replay belief logs with today's tiers, by hand."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.management.base import CommandParser

from beliefs.services import REBUILD_BELIEFS
from diagnostics.management.job_command import JobCommand


class Command(JobCommand):
    help = "Replay every belief (or those a channel touched) and store the result, with progress."
    job = REBUILD_BELIEFS

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--channel", action="append", help="only beliefs this channel touched (repeat)")

    def params(self, options: Mapping[str, Any]) -> dict[str, Any]:
        # No channel: every belief.
        return {"channels": sorted(options["channel"]) if options["channel"] else None}

"""`recompute_diagnostics [--all]`: the snapshot job, by hand."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.management.base import CommandParser

from diagnostics.job_runner import RECOMPUTE_DIAGNOSTICS
from diagnostics.management.job_command import JobCommand


class Command(JobCommand):
    help = "Snapshot every owner with activity since its last snapshot (--all: every owner), then the deployment."
    job = RECOMPUTE_DIAGNOSTICS

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--all", action="store_true", help="snapshot every owner, active or not")

    def params(self, options: Mapping[str, Any]) -> dict[str, Any]:
        return {"all_owners": options["all"]}

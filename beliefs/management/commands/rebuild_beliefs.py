"""`rebuild_beliefs`: replay belief logs with today's tiers, by hand."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from beliefs.models import RebuildJob
from beliefs.services import affected_keys, rebuild_run


class Command(BaseCommand):
    help = "Replay every belief (or those a channel touched) and store the result, with progress."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--channel", action="append", help="only beliefs this channel touched (repeat)")

    def handle(self, *args: Any, **options: Any) -> None:
        channels = options["channel"]
        job = RebuildJob.objects.create(
            reason="rebuild_beliefs by hand", channels=channels or ["*"], total=len(affected_keys(channels))
        )
        self.stdout.write(f"Rebuilding {job.total} belief(s)…")
        job = rebuild_run(job_id=job.pk)
        self.stdout.write(f"Rebuilt {job.done} belief(s); {job.changed} changed. Job {job.pk}: {job.status}.")

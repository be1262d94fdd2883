"""What every job's management command does: run it here, record it, sum it up in one line."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from atlaso_site.job_runs.models import JobRun, Status, Trigger
from diagnostics.job_runner import job_run_now, summary


class JobCommand(BaseCommand):
    """Runs `job` in the foreground as a run with trigger `command`.

    Prints one line with its counts; exits 1 when the run failed, 0 when it was skipped
    (saying why).
    """

    job: str

    def params(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """The run's params from the command line."""
        return {}

    def judge(self, run: JobRun) -> None:
        """Raise CommandError when a run that succeeded found something wrong."""

    def handle(self, *args: Any, **options: Any) -> None:
        run = job_run_now(name=self.job, trigger=Trigger.COMMAND, params=self.params(options))
        self.stdout.write(summary(run))
        if run.status == Status.FAILED:
            raise CommandError(f"{self.job} failed: {run.error}")
        if run.status == Status.SUCCEEDED:
            self.judge(run)

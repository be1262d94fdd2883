"""`verify_beliefs`: report any stored belief state that differs from the replay of its log."""

from __future__ import annotations

from django.core.management.base import CommandError

from atlaso_site.job_runs.models import JobRun
from diagnostics.job_runner import VERIFY_BELIEFS
from diagnostics.management.job_command import JobCommand


class Command(JobCommand):
    help = "Compare every stored belief with the replay of its log; exit 1 when any differs."
    job = VERIFY_BELIEFS

    def judge(self, run: JobRun) -> None:
        """A run that found differences did its work (it succeeded), but the command exits 1."""
        for user_id, key in run.counts["mismatches"]:
            self.stdout.write(f"DIFFERS {user_id} {key}")
        mismatched = run.counts["mismatched"]
        if mismatched:
            raise CommandError(f"{mismatched} belief(s) differ from their log; run rebuild_beliefs")

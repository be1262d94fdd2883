"""`expire_idempotency_keys`: the hourly job, by hand."""

from __future__ import annotations

from diagnostics.job_runner import EXPIRE_IDEMPOTENCY_KEYS
from diagnostics.management.job_command import JobCommand


class Command(JobCommand):
    help = "Delete idempotency entries older than 24 hours (reads already ignore them)."
    job = EXPIRE_IDEMPOTENCY_KEYS

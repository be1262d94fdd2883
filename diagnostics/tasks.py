"""Thin Celery tasks over the runner (`diagnostics.jobs`): a recorded run, and beat's ticks."""

from __future__ import annotations

from celery import shared_task

from atlaso_site.lib.jobs.models import Trigger
from diagnostics import jobs


# acks_late: the message is acknowledged when the run ends, so a worker killed mid-run leaves
# it to be delivered again (reject_on_worker_lost: at once, when a pool child dies); the claim
# makes that second delivery do nothing, and the first run is reported lost.
@shared_task(name="diagnostics.tasks.run_job", acks_late=True, reject_on_worker_lost=True)
def run_job(run_id: str) -> str | None:
    run = jobs.job_execute(run_id)
    return None if run is None else run.status


@shared_task(name="diagnostics.tasks.run_scheduled_job")
def run_scheduled_job(name: str) -> str:
    """Beat's tick: record a run with trigger `beat` and run it in this worker."""
    return jobs.job_run_now(name=name, trigger=Trigger.BEAT).status


def dispatch(run_id: str) -> None:
    """The kernel's dispatcher: a queued run goes to a worker (or runs inline when eager)."""
    run_job.delay(run_id)

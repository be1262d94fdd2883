"""Thin Celery tasks over the runner (`diagnostics.job_runner`): a recorded run, beat's ticks, the sweep."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from celery.signals import worker_ready

from atlaso_site.job_runs import JobSkipped
from atlaso_site.job_runs.models import Trigger
from atlaso_site.job_runs.services import job_sweep
from deposits.embedders import EmbedderError
from deposits.services.embedding import deposits_embed
from diagnostics import job_runner

logger = logging.getLogger(__name__)


# acks_late: the message is acknowledged when the run ends, so a worker killed mid-run leaves
# it to be delivered again (reject_on_worker_lost: at once, when a pool child dies). A second
# delivery watches the run's heartbeat and takes it once it stops (the dead pool child's run
# starts again within JOB_HEARTBEAT_LOST_AFTER_SECONDS); a whole worker killed leaves its
# message with the broker (for an hour, or lost), and the sweep sends its lost run again.
@shared_task(name="diagnostics.tasks.run_job", acks_late=True, reject_on_worker_lost=True)
def run_job(run_id: str) -> str | None:
    run = job_runner.job_execute(run_id, watch=True)
    return None if run is None else run.status


@shared_task(name="diagnostics.tasks.run_scheduled_job")
def run_scheduled_job(name: str) -> str:
    """Beat's tick: record a run with trigger `beat` and run it in this worker."""
    return job_runner.job_run_now(name=name, trigger=Trigger.BEAT).status


@shared_task(name="diagnostics.tasks.sweep_job_runs")
def sweep_job_runs() -> list[str]:
    """Send again the runs the broker refused or whose worker died (beat, and each worker's start)."""
    sent = job_sweep()
    if sent:
        logger.info("sweep sent %d job run(s) again: %s", len(sent), ", ".join(sent))
    return sent


@worker_ready.connect
def sweep_when_a_worker_starts(sender: Any = None, **kwargs: Any) -> None:
    """A worker that starts (after a crash, say) sweeps once rather than wait for beat's next tick.

    Sent through the broker, so the sweep runs in a pool process like any task, not in the
    worker's main process, which forks the pool and must hold no database connection.
    """
    try:
        sweep_job_runs.delay()
    except Exception as error:  # the broker is gone again: beat's next sweep will do
        logger.warning("could not queue the start-up sweep: %s", error)


@shared_task(name="diagnostics.tasks.embed_new_deposits")
def embed_new_deposits() -> int:
    """Embed the backlog now, as writes ask once they commit, without recording a run.

    One run recorded per write, or two, would flood the job runs; the beat sweep's runs, which catch
    what these miss, are recorded.
    """
    try:
        counts = deposits_embed()
    except JobSkipped:
        return 0  # another run is embedding, and takes these deposits too
    except EmbedderError as error:
        logger.warning("embedding new deposits failed: %s; they wait for the sweep", error)
        return 0
    if counts["embedded"]:
        logger.info("embedded %d new deposit(s) (%s/s)", counts["embedded"], counts["per_second"])
    return int(counts["embedded"])


@shared_task(name="diagnostics.tasks.sweep_embeddings")
def sweep_embeddings() -> str | None:
    """Beat's tick: a recorded run of the embedding job when a deposit has waited too long."""
    if not job_runner.embedding_sweep_due():
        return None
    return job_runner.job_run_now(name=job_runner.EMBED_DEPOSITS, trigger=Trigger.BEAT).status


def ask_for_embedding() -> None:
    """The services' way to ask for an embedding run after a write (deposits.services.embedding)."""
    embed_new_deposits.delay()


def dispatch(run_id: str) -> None:
    """The kernel's dispatcher: a queued run goes to a worker (or runs inline when eager)."""
    run_job.delay(run_id)

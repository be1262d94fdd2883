"""Thin Celery tasks over belief services."""

from __future__ import annotations

import logging

from celery import shared_task

from beliefs.services import beliefs_verify, rebuild_run

logger = logging.getLogger(__name__)


@shared_task(name="beliefs.tasks.rebuild_beliefs")
def rebuild_beliefs(job_id: int) -> dict[str, int]:
    job = rebuild_run(job_id=job_id)
    return {"total": job.total, "done": job.done, "changed": job.changed}


@shared_task(name="beliefs.tasks.verify_beliefs")
def verify_beliefs() -> int:
    differing = beliefs_verify()
    for user_id, key in differing:
        logger.warning("belief %s/%s differs from the replay of its log", user_id, key)
    return len(differing)

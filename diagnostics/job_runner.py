"""The runner: every job by name, and the one way a recorded run is run.

A job is a service that takes its run's params and a progress callback and returns its
counts. The apps below record runs through the kernel (`atlaso_site.job_runs`); this module,
in the top app, is the only one that knows every job, so it runs them all: the Celery tasks
(`diagnostics.tasks`), the management commands and the jobs API call it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from datetime import timedelta
from typing import Any
from uuid import UUID

from atlaso_site.job_runs import Progress
from atlaso_site.job_runs.models import JobRun, Status
from atlaso_site.job_runs.services import job_claim, job_claim_or_watch, job_enqueue, job_record
from atlaso_site.lib.errors import not_found
from beliefs.services import REBUILD_BELIEFS, beliefs_rebuild, beliefs_verify
from deposits.services.deposits import idempotency_expire
from deposits.services.embedding import deposits_embed
from diagnostics.services import diagnostics_recompute

RECOMPUTE_DIAGNOSTICS = "recompute_diagnostics"
EXPIRE_IDEMPOTENCY_KEYS = "expire_idempotency_keys"
VERIFY_BELIEFS = "verify_beliefs"
EMBED_DEPOSITS = "embed_deposits"

Job = Callable[[Mapping[str, Any], Progress], Mapping[str, Any]]

JOBS: dict[str, Job] = {
    RECOMPUTE_DIAGNOSTICS: lambda params, progress: diagnostics_recompute(
        all_owners=bool(params.get("all_owners")), progress=progress
    ),
    EXPIRE_IDEMPOTENCY_KEYS: lambda params, progress: idempotency_expire(progress=progress),
    REBUILD_BELIEFS: lambda params, progress: beliefs_rebuild(
        channels=params.get("channels"), progress=progress
    ),
    VERIFY_BELIEFS: lambda params, progress: beliefs_verify(progress=progress),
    EMBED_DEPOSITS: lambda params, progress: deposits_embed(
        progress=progress,
        user_id=params.get("owner"),
        limit=params.get("limit"),
        threads=params.get("threads"),
        batch=params.get("batch"),
    ),
}

#: The jobs a person may start by hand (`job_start`): every job; the API starts any of them.
STARTABLE: tuple[str, ...] = tuple(JOBS)
#: What the jobs page offers: STARTABLE less `rebuild_beliefs`. A rebuild belongs to the change
#: that needs it (a tier or channel change starts one over the channels it touched), so the page
#: has no button that replays every belief at one click; an admin key may still ask the API.
DASHBOARD_STARTABLE: tuple[str, ...] = tuple(name for name in STARTABLE if name != REBUILD_BELIEFS)


def _known(name: str, among: Collection[str] = JOBS) -> str:
    if name not in among:
        raise not_found(f"there is no job {name!r}; the jobs are: {', '.join(sorted(among))}")
    return name


def job_start(*, name: str, trigger: str, params: Mapping[str, Any] | None = None) -> JobRun:
    """Record a queued run of a job a person started (one of STARTABLE) and send it to a worker."""
    return job_enqueue(name=_known(name, STARTABLE), trigger=trigger, params=params)


def job_execute(run_id: str | UUID, *, watch: bool = False) -> JobRun | None:
    """Run a recorded run in this process; None when it was taken already (a second delivery).

    With `watch` (a worker's delivery), a run that is running elsewhere is watched and taken
    once its heartbeat stops (`job_claim_or_watch`): its worker died.
    """
    recorder = job_claim_or_watch(run_id) if watch else job_claim(run_id)
    if recorder is None:
        return None
    run = recorder.run
    job = JOBS.get(run.name)
    if job is None:
        return recorder.fail(f"there is no job {run.name!r} in this version of Atlaso")
    return recorder.run_with(lambda progress: job(run.params, progress))


def job_run_now(*, name: str, trigger: str, params: Mapping[str, Any] | None = None) -> JobRun:
    """Record a run and run it here, in the foreground (a command, a beat tick)."""
    run = job_record(name=_known(name), trigger=trigger, params=params)
    finished = job_execute(run.pk)
    assert finished is not None  # recorded just now and sent nowhere: nobody else can take it
    return finished


def embedding_sweep_due() -> bool:
    """Whether beat should record an embedding run: a deposit has waited too long for its vector.

    Longer than EMBED_SWEEP_AFTER_SECONDS, with an embedder configured and no embedding run under
    way.
    """
    from django.conf import settings
    from django.utils import timezone

    from atlaso_site.job_runs.models import lost_rule
    from deposits.embedders import configured
    from deposits.models import EmbeddingPending

    if configured().embedder is None:
        return False
    waited = timezone.now() - timedelta(seconds=settings.EMBED_SWEEP_AFTER_SECONDS)
    if not EmbeddingPending.objects.filter(queued_at__lt=waited).exists():
        return False
    under_way = JobRun.objects.filter(name=EMBED_DEPOSITS, status__in=(Status.QUEUED, Status.RUNNING))
    return not under_way.with_last_sign().exclude(lost_rule(timezone.now())).exists()


def summary(run: JobRun) -> str:
    """One line: the job, how it ended, its counts, its run id."""
    took = ""
    if run.started_at and run.finished_at:
        took = f" in {(run.finished_at - run.started_at).total_seconds():.1f} s"
    return f"{run.name} {run.status}{took}{_told(run)} (run {run.pk})"


def _told(run: JobRun) -> str:
    """What a run's line says after its name: why it was skipped, its error, or its counts."""
    counts = dict(run.counts or {})
    if run.status == Status.SKIPPED:
        return f": {counts.get('reason', '')}"
    if run.status == Status.FAILED:
        return f": {run.error}"
    shown = {k: len(v) if isinstance(v, list) else v for k, v in counts.items() if k != "mismatches"}
    return ": " + ", ".join(f"{k} {v}" for k, v in shown.items()) if shown else ""

"""Job runs in API v1: list and read them, and start one; for unconfined admin keys.

Any of `job_runner.STARTABLE` may be started: the one list of jobs a person may start, which
`job_runner.job_start` checks. Admin keys confined to no prefix only.
"""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Query, Router, Status

from atlaso_site.access.api_keys import GLOBAL_ADMIN
from atlaso_site.job_runs import selectors
from atlaso_site.job_runs.models import Trigger
from atlaso_site.wire import UuidText, with_errors
from diagnostics import job_runner
from diagnostics.schemas import JobName, JobRunOut, JobRunPageOut, JobRunQuery

router = Router(tags=["jobs"])


@router.get("/jobs", response=with_errors(**{"200": JobRunPageOut}), auth=GLOBAL_ADMIN)
def list_job_runs(request: HttpRequest, query: Query[JobRunQuery]):
    """Runs of every job, newest queued first; `status=lost` or `stalled` finds runs that stopped moving."""
    page = selectors.job_run_page(
        name=query.name, status=query.status, limit=query.limit, offset=query.offset
    )
    return Status(200, page)


@router.get("/jobs/{id}", response=with_errors(404, **{"200": JobRunOut}), auth=GLOBAL_ADMIN)
def get_job_run(request: HttpRequest, id: UuidText):
    """One run: its status as reported, progress (done of total), counts and error."""
    return Status(200, selectors.job_run_get(run_id=id))


@router.post("/jobs/{name}/runs", response=with_errors(404, **{"202": JobRunOut}), auth=GLOBAL_ADMIN)
def start_job_run(request: HttpRequest, name: JobName):
    """Queue a run of the job (trigger `api`); a worker takes it. Follow it at /jobs/{id}."""
    return Status(202, job_runner.job_start(name=name, trigger=Trigger.API))

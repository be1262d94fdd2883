"""GET /jobs, GET /jobs/{id}, POST /jobs/{name}/runs: every run on record, for unconfined admin keys."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from atlaso_site.job_runs.models import JobRun
from atlaso_site.job_runs.services import job_claim, job_record
from atlaso_site.lib.paging import MAX_OFFSET
from tests.beliefs.helpers import OLD, observe
from tests.conftest import ApiClient, make_client

pytestmark = pytest.mark.django_db

JOB_RUN_FIELDS = {
    "kind", "id", "name", "trigger", "status", "queued_at", "started_at", "finished_at", "done", "total",
    "counts", "error",
}  # fmt: skip


@pytest.fixture
def admin(db):
    return make_client(channel="ops", perms=("read", "admin"))


def recorded(name: str, *, minutes_ago: float, status: str = "queued", trigger: str = "beat") -> JobRun:
    """A run of `name` queued `minutes_ago`, then claimed and ended as `status` asks."""
    run = job_record(name=name, trigger=trigger)
    if status != "queued":
        recorder = job_claim(run.pk)
        if status == "succeeded":
            recorder.succeed({"deleted": 0})
        elif status == "failed":
            recorder.fail("RuntimeError: boom")
    past = timezone.now() - timedelta(minutes=minutes_ago)
    JobRun.objects.filter(pk=run.pk).update(
        queued_at=past,
        **({} if status == "queued" else {"started_at": past, "heartbeat_at": past}),
    )
    return JobRun.objects.get(pk=run.pk)


def test_a_run_is_listed_with_every_field_and_read_by_its_id(admin):
    run = recorded("expire_idempotency_keys", minutes_ago=1, status="succeeded")
    page = admin.get("/jobs")
    assert page.status == 200, page.body
    assert (page.body["kind"], page.body["total"]) == ("job_run_page", 1)
    [item] = page.body["items"]
    assert set(item) == JOB_RUN_FIELDS
    assert (item["kind"], item["id"], item["name"], item["trigger"], item["status"]) == (
        "job_run", str(run.pk), "expire_idempotency_keys", "beat", "succeeded",
    )  # fmt: skip
    assert (item["counts"], item["error"], item["done"], item["total"]) == ({"deleted": 0}, None, 0, 0)
    for field in ("queued_at", "started_at", "finished_at"):
        parsed = datetime.fromisoformat(item[field])
        assert parsed.utcoffset() == timedelta(0) and item[field].endswith("+00:00")
        assert len(item[field].split(".")[1]) == len("000000+00:00")
    one = admin.get(f"/jobs/{run.pk}")
    assert one.status == 200 and one.body == item


def ids(body: dict) -> list[str]:
    return [item["id"] for item in body["items"]]


def test_runs_are_listed_newest_first_filtered_by_name_and_status_and_paged(admin):
    oldest = recorded("verify_beliefs", minutes_ago=30, status="succeeded")
    middle = recorded("expire_idempotency_keys", minutes_ago=20, status="failed")
    newest = recorded("verify_beliefs", minutes_ago=1)
    assert ids(admin.get("/jobs").body) == [str(newest.pk), str(middle.pk), str(oldest.pk)]
    by_name = admin.get("/jobs?name=verify_beliefs").body
    assert (ids(by_name), by_name["total"]) == ([str(newest.pk), str(oldest.pk)], 2)
    failed = admin.get("/jobs?status=failed").body
    assert (ids(failed), failed["items"][0]["error"]) == ([str(middle.pk)], "RuntimeError: boom")
    assert ids(admin.get("/jobs?name=verify_beliefs&status=succeeded").body) == [str(oldest.pk)]
    assert admin.get("/jobs?name=no_such_job").body == {"kind": "job_run_page", "items": [], "total": 0}
    second = admin.get("/jobs?limit=1&offset=1").body
    assert (ids(second), second["total"]) == ([str(middle.pk)], 3)
    beyond = admin.get("/jobs?limit=2&offset=5").body
    assert (beyond["items"], beyond["total"]) == ([], 3)


def test_a_run_that_stopped_moving_is_reported_lost_and_one_never_taken_stalled(admin):
    lost = recorded("rebuild_beliefs", minutes_ago=11, status="running", trigger="tier_change")
    alive = recorded("rebuild_beliefs", minutes_ago=2, status="running", trigger="tier_change")
    stalled = recorded("verify_beliefs", minutes_ago=11, trigger="api")
    waiting = recorded("verify_beliefs", minutes_ago=2, trigger="api")
    assert admin.get(f"/jobs/{lost.pk}").body["status"] == "lost"
    assert admin.get(f"/jobs/{stalled.pk}").body["status"] == "stalled"
    expected = {"lost": lost, "running": alive, "stalled": stalled, "queued": waiting}
    for status, run in expected.items():
        page = admin.get(f"/jobs?status={status}").body
        assert [(item["id"], item["status"]) for item in page["items"]] == [(str(run.pk), status)], status
    # A heartbeat brings a run back: it is running again, not lost.
    JobRun.objects.filter(pk=lost.pk).update(heartbeat_at=timezone.now())
    assert admin.get(f"/jobs/{lost.pk}").body["status"] == "running"


def test_posting_a_run_queues_it_with_trigger_api(admin):
    answer = admin.post("/jobs/verify_beliefs/runs")
    assert answer.status == 202, answer.body
    body = answer.body
    assert set(body) == JOB_RUN_FIELDS
    assert (body["kind"], body["name"], body["trigger"], body["status"]) == (
        "job_run", "verify_beliefs", "api", "queued",
    )  # fmt: skip
    assert (body["started_at"], body["finished_at"], body["counts"], body["error"]) == (None, None, {}, None)
    assert JobRun.objects.get().pk.hex == body["id"].replace("-", "")


def test_a_posted_run_reaches_a_worker_once_committed_and_ends_succeeded(
    admin, api, settings, django_capture_on_commit_callbacks
):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    observe(api, OLD)
    with django_capture_on_commit_callbacks(execute=True) as sent:
        answer = admin.post("/jobs/verify_beliefs/runs")
    assert (answer.status, answer.body["status"], len(sent)) == (202, "queued", 1)
    run = admin.get(f"/jobs/{answer.body['id']}").body
    assert (run["status"], run["trigger"], run["done"], run["total"]) == ("succeeded", "api", 1, 1)
    assert run["counts"] == {"checked": 1, "mismatched": 0, "mismatches": []}


def test_a_tier_change_is_on_record_as_a_rebuild_run(admin):
    assert admin.call("PUT", "/tiers/agent_own", {"ceiling": 0.5}).status == 200
    [run] = admin.get("/jobs?name=rebuild_beliefs").body["items"]
    assert (run["trigger"], run["status"]) == ("tier_change", "queued")


def test_starting_an_unknown_job_is_404_naming_the_jobs_and_records_nothing(admin):
    answer = admin.post("/jobs/no_such_job/runs")
    assert answer.status == 404
    assert answer.body["kind"] == "error" and answer.body["error"]["code"] == "not_found"
    assert not JobRun.objects.exists()
    assert answer.body["error"]["message"] == (
        "there is no job 'no_such_job'; the jobs are: embed_deposits, expire_idempotency_keys, rebuild_beliefs, "
        "recompute_diagnostics, verify_beliefs"
    )


@pytest.mark.parametrize("run_id", ["00000000-0000-0000-0000-000000000000", "not-a-uuid", "12", "x" * 300])
def test_an_unknown_or_malformed_run_id_is_404(admin, run_id):
    answer = admin.get(f"/jobs/{run_id}")
    assert answer.status == 404, answer.body
    assert answer.body["error"]["code"] == "not_found"


@pytest.mark.parametrize(
    "query",
    ["limit=0", "limit=201", f"offset={MAX_OFFSET + 1}", "offset=-1", "status=done", "status=lost2"],
)
def test_an_out_of_range_page_or_an_unknown_status_is_422(admin, query):
    answer = admin.get(f"/jobs?{query}")
    assert answer.status == 422, answer.body
    assert answer.body["error"]["code"] == "validation_error"
    assert answer.body["error"]["field"] == query.split("=")[0]


@pytest.mark.parametrize(
    ("perms", "prefix", "says"),
    [
        (("read",), "", "lacks the 'admin' permission"),
        (("read", "write", "erase"), "", "lacks the 'admin' permission"),
        (("read", "admin"), "tenant-a:", "confined to user_ids starting 'tenant-a:'"),
    ],
)
def test_a_key_that_is_not_an_unconfined_admin_gets_403_everywhere(perms, prefix, says):
    run = recorded("verify_beliefs", minutes_ago=1)
    client = make_client(channel="someone", perms=perms, prefix=prefix)
    for method, path in (("GET", "/jobs"), ("GET", f"/jobs/{run.pk}"), ("POST", "/jobs/verify_beliefs/runs")):
        answer = client.call(method, path)
        assert answer.status == 403, (method, path)
        assert answer.body["error"]["code"] == "forbidden"
        assert says in answer.body["error"]["message"]
    assert JobRun.objects.count() == 1


def test_without_a_key_it_is_401(db):
    assert ApiClient(None).get("/jobs").status == 401

"""Every diagnostics page, fragment and action checks access: login first, then the role it needs."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from atlaso_site.job_runs.models import JobRun
from tests.diagnostics.dashboard import conflict, logged_in, run

pytestmark = pytest.mark.django_db

PAGES = {
    "overview": "/",
    "owners": "/owners/?q=al&sort=-fmi&page=1",
    "owners fragment": "/owners/?q=al",
    "owner": "/owners/alice/?conflict=1&page=1",
    "health": "/health/?days=7&owner=alice",
    "jobs": "/jobs/",
    "job run": None,  # filled with a real run's path
}
START = "/jobs/recompute_diagnostics/start/"


@pytest.fixture
def world() -> dict[str, str]:
    conflict("alice")
    done = run("recompute_diagnostics")
    return {**PAGES, "job run": f"/jobs/runs/{done.pk}/"}


@pytest.mark.parametrize("page", PAGES)
def test_anonymous_is_sent_to_log_in_and_back(client, world, page):
    response = client.get(world[page])
    assert response.status_code == 302
    assert response.url == f"/accounts/login/?next={quote(world[page], safe='/')}"


def test_anonymous_cannot_start_a_job(client, world):
    response = client.post(START)
    assert response.status_code == 302 and response.url.startswith("/accounts/login/?next=")
    assert JobRun.objects.count() == 1


@pytest.mark.parametrize("page", PAGES)
def test_an_anonymous_htmx_request_sends_the_whole_window_to_log_in(client, world, page):
    response = client.get(
        world[page], headers={"HX-Request": "true", "HX-Current-URL": "http://testserver/owners/"}
    )
    assert response["HX-Redirect"] == "/accounts/login/?next=/owners/"


@pytest.mark.parametrize("page", PAGES)
def test_a_login_with_no_role_is_refused(world, page):
    response = logged_in("no-role").get(world[page])
    assert response.status_code == 403
    assert "needs the reviewer or operator role" in response.content.decode()


@pytest.mark.parametrize("page", PAGES)
def test_a_login_with_no_role_is_refused_a_fragment_too(world, page):
    response = logged_in("no-role").get(world[page], headers={"HX-Request": "true"})
    assert response.status_code == 403


@pytest.mark.parametrize("role", ["reviewer", "operator", "superuser"])
@pytest.mark.parametrize("page", PAGES)
def test_reviewers_and_operators_see_every_page(world, role, page):
    response = logged_in(role).get(world[page])
    assert response.status_code == 200


def test_a_login_with_no_role_cannot_start_a_job(world):
    assert logged_in("no-role").post(START).status_code == 403
    assert JobRun.objects.count() == 1


def test_a_reviewer_cannot_start_a_job(world):
    response = logged_in("reviewer").post(START)
    assert response.status_code == 403
    assert "needs the operator role" in response.content.decode()
    assert JobRun.objects.count() == 1


@pytest.mark.parametrize("role", ["operator", "superuser"])
def test_an_operator_may_start_a_job(world, role):
    response = logged_in(role).post(START)
    assert response.status_code == 302 and response.url == "/jobs/"
    assert JobRun.objects.filter(name="recompute_diagnostics", trigger="dashboard").count() == 1

"""An embeddings endpoint that is down, slow, or answers garbage or the wrong dimension.

The endpoint is a real local HTTP server, OpenAI-compatible. Writes go on unaffected, the
backlog grows, recall falls back to words and says so, and the embedding job catches up once
the endpoint answers again.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from atlaso_site.job_runs.models import Status
from deposits import embedders
from deposits.models import DepositVector, EmbeddingPending
from deposits.services import embedding
from diagnostics.job_runner import EMBED_DEPOSITS, job_run_now
from tests.deposits.meaning.conftest import forget_everything_cached, needs_local_model

pytestmark = [pytest.mark.django_db, needs_local_model]

QUERY_TIMEOUT = 0.4
# The timeouts while the endpoint works (the model is slow on a busy machine), and the job's while
# the slow endpoint fails (it answers after 2 s).
WORKING_TIMEOUT = 60.0
FAILING_TIMEOUT = 1.0
FAILURES = {
    "down": "the embeddings endpoint could not be reached (ConnectError)",
    "slow": f"the embeddings endpoint did not answer within {QUERY_TIMEOUT:g} s",
    "garbage": "the embeddings endpoint answered something other than embeddings",
    "wrong_dims": "the embedder answered 3 dimensions where openai:e5-test's vectors have 384",
    "error": "the embeddings endpoint answered HTTP 500",
}
# What the job says when its batch fails (the query's timeout is shorter than the job's).
JOB_FAILURES = FAILURES | {
    "slow": "the embeddings endpoint did not answer within 1 s",
    "wrong_dims": "the embedder answered 3 dimensions where openai:e5-test's vectors have 384",
}


@pytest.fixture(scope="module")
def endpoint() -> Iterator[object]:
    from tests.deposits.meaning.endpoint import FakeEmbeddings

    server = FakeEmbeddings(slow_seconds=2.0)
    yield server
    server.down()


@pytest.fixture
def openai(settings, endpoint, monkeypatch) -> Iterator[list[str]]:
    """ATLASO_EMBEDDER=openai on the fake endpoint; yields the embedding runs writes asked for."""
    endpoint.up("up")
    settings.ATLASO_EMBEDDER = "openai"
    settings.ATLASO_EMBEDDINGS_URL = endpoint.url
    settings.ATLASO_EMBEDDINGS_MODEL = "e5-test"
    settings.ATLASO_EMBEDDINGS_TIMEOUT = settings.ATLASO_EMBEDDINGS_QUERY_TIMEOUT = WORKING_TIMEOUT
    monkeypatch.setattr(embedders, "RETRY_PAUSES", (0.05,))
    asked: list[str] = []
    monkeypatch.setattr(embedding, "_trigger", lambda: asked.append("run"))
    monkeypatch.setattr(embedding, "_wanted_at", -1e9)
    monkeypatch.setattr(embedding, "WANT_EVERY_SECONDS", 0.0)
    forget_everything_cached()
    yield asked
    forget_everything_cached()
    endpoint.up("up")


def add(api, content: str, capture) -> float:
    """Add one deposit as an agent does, its commit hooks run; the seconds it took."""
    started = time.perf_counter()
    with capture(execute=True):
        answer = api.post("/users/alice/deposits", {"content": content, "scope": {"model": "diet"}})
    took = time.perf_counter() - started
    assert answer.status == 201, answer.body
    return took


def break_endpoint(endpoint, failure: str) -> None:
    if failure == "down":
        endpoint.down()
    else:
        endpoint.up(failure)


@pytest.mark.parametrize("failure", list(FAILURES))
def test_a_failing_endpoint_leaves_writes_alone_recall_says_so_and_the_job_catches_up(
    failure, openai, endpoint, api, django_capture_on_commit_callbacks, settings
):
    add(api, "I'm vegan", django_capture_on_commit_callbacks)
    assert job_run_now(name=EMBED_DEPOSITS, trigger="command").status == Status.SUCCEEDED
    assert DepositVector.objects.count() == 1

    # Only the slow endpoint is meant to outlast the timeouts; the others answer (a busy machine's
    # model may take a while to).
    if failure == "slow":
        settings.ATLASO_EMBEDDINGS_TIMEOUT = FAILING_TIMEOUT
        settings.ATLASO_EMBEDDINGS_QUERY_TIMEOUT = QUERY_TIMEOUT
    break_endpoint(endpoint, failure)
    asked_before, requests_before = len(openai), endpoint.requests
    took = [
        add(api, text, django_capture_on_commit_callbacks) for text in ("I run marathons", "I hate mornings")
    ]
    # The writes never asked the endpoint anything, committed at once, and asked for a run after.
    assert endpoint.requests == requests_before
    assert max(took) < 0.5, took
    assert len(openai) == asked_before + 2
    assert EmbeddingPending.objects.count() == 2

    started = time.perf_counter()
    results = api.get("/users/alice/recall?q=what+food+does+she+like&mode=hybrid").body
    took_recall = time.perf_counter() - started
    assert (
        results["explain"]
        == f"0 hits across 0 bags · 0 bags in conflict · not confident · by words only: {FAILURES[failure]}"
    )
    if failure == "slow":
        assert took_recall < QUERY_TIMEOUT + 1.0
    print(
        f"\n{failure}: adds {max(took) * 1000:.0f} ms at most; recall fell back in {took_recall * 1000:.0f} ms"
    )

    run = job_run_now(name=EMBED_DEPOSITS, trigger="command")
    assert (run.status, run.error) == (Status.FAILED, f"EmbedderError: {JOB_FAILURES[failure]}")
    assert EmbeddingPending.objects.count() == 2

    endpoint.up("up")
    settings.ATLASO_EMBEDDINGS_TIMEOUT = settings.ATLASO_EMBEDDINGS_QUERY_TIMEOUT = WORKING_TIMEOUT
    run = job_run_now(name=EMBED_DEPOSITS, trigger="command")
    assert (run.status, run.counts["embedded"], run.counts["waiting"]) == (Status.SUCCEEDED, 2, 0)
    forget_everything_cached()
    found = api.get("/users/alice/recall?q=what+food+does+she+like&mode=meaning").body
    assert [hit["content"] for hit in found["items"]][:1] == ["I'm vegan"]
    assert found["explain"].endswith(" · by meaning")


def test_without_an_endpoint_setting_the_embedder_is_unavailable_and_check_says_why(settings, api):
    from django.core.management import call_command
    from django.core.management.base import SystemCheckError

    settings.ATLASO_EMBEDDER = "openai"
    settings.ATLASO_EMBEDDINGS_URL = ""
    settings.ATLASO_EMBEDDINGS_MODEL = "e5-test"
    answer = api.get("/users/alice/recall?q=anything&mode=meaning")
    assert (answer.status, answer.body["error"]["code"]) == (422, "embedder_unavailable")
    assert "ATLASO_EMBEDDINGS_URL is not set" in answer.body["error"]["message"]
    with pytest.raises(
        SystemCheckError, match="ATLASO_EMBEDDER is openai but ATLASO_EMBEDDINGS_URL is not set"
    ):
        call_command("check")

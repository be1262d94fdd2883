"""A committed write's deposit embedded by the task it asks for, through a real Celery worker.

Recall then finds it by meaning; no job run is recorded for it.
"""

from __future__ import annotations

import pytest

from atlaso_site.job_runs.models import JobRun
from deposits.models import DepositVector, EmbeddingPending
from deposits.services import embedding
from tests.celery_worker import celery_worker, wait_until
from tests.conftest import make_client
from tests.deposits.meaning.conftest import needs_local_model

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.postgres,
    pytest.mark.redis,
    needs_local_model,
]


def test_a_committed_write_is_embedded_by_the_task_it_asks_for(settings, monkeypatch, local_embedder):
    monkeypatch.setenv("ATLASO_EMBEDDER", "local")
    monkeypatch.setattr(embedding, "_wanted_at", -1e9)
    with celery_worker(settings) as worker:
        writer = make_client()
        added = writer.post("/users/alice/deposits", {"content": "I'm vegan"})
        assert added.status == 201
        wait_until(
            lambda: EmbeddingPending.objects.count(), lambda waiting: waiting == 0, worker=worker, timeout=120
        )
    assert [str(i) for i in DepositVector.objects.values_list("deposit_id", flat=True)] == [
        added.body["deposit"]["id"]
    ]
    assert not JobRun.objects.filter(name="embed_deposits").exists()
    found = writer.get("/users/alice/recall?q=what+food+does+she+like&mode=meaning").body
    assert [hit["content"] for hit in found["items"]] == ["I'm vegan"]

"""recall() only reads: the dashboard's playground can call it without counting toward Coverage."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from deposits.models import RecallLog
from deposits.selectors.recall import recall
from deposits.services.deposits import recall_record
from tests.deposits.scenario import correct, put

pytestmark = pytest.mark.django_db

WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")


def test_recall_sends_no_write_to_the_database():
    put("positive", "threshold 0.7 holds")
    wrong = put("negative", "threshold 0.7 fails")
    correct([wrong], "threshold 0.7 holds after all")
    with CaptureQueriesContext(connection) as queries:
        results = recall(user_id="alice", query="threshold", limit=5)
    assert len(results) == 2
    writes = [q["sql"] for q in queries.captured_queries if q["sql"].lstrip().upper().startswith(WRITES)]
    assert writes == []
    assert RecallLog.objects.count() == 0


def test_recording_a_recall_counts_it_toward_coverage(api):
    put("positive", "threshold 0.7 holds")
    put("positive", "threshold 0.7 holds again")
    recall_record(user_id="alice", results=recall(user_id="alice", query="threshold"))
    assert list(RecallLog.objects.values_list("user_id", "hit_count", "returned_confident")) == [
        ("alice", 2, True)
    ]
    assert api.get("/users/alice/health").body["coverage"] == 1.0


def test_an_agents_recall_through_the_api_is_recorded(api):
    put("positive", "threshold 0.7 holds")
    assert api.get("/users/alice/recall?q=threshold").status == 200
    assert RecallLog.objects.filter(user_id="alice").count() == 1

"""The revision log is append-only in the database itself: every observation adds a row, none changes."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

from beliefs.models import BeliefRevision
from tests.beliefs.helpers import NEW, OLD, observe, verdict


def run(sql: str, params: list) -> int:
    # A savepoint, so a refused statement leaves the test's transaction usable on PostgreSQL.
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("value", NEW),
        ("reliability", 0.99),
        ("tier", "user_edit"),
        ("channel", "owner-app"),
        ("effective", True),
        ("observed_at", "2020-01-01 00:00:00"),
        ("user_id", "mallory"),
    ],
)
def test_a_direct_sql_update_of_a_revision_fails(api, column, value):
    observe(api, OLD, content_confidence=0.2)
    revision = BeliefRevision.objects.get()
    with pytest.raises(DatabaseError, match="append-only"):
        run(f"UPDATE beliefs_beliefrevision SET {column} = %s WHERE id = %s", [value, revision.pk])
    revision.refresh_from_db()
    assert (revision.value, revision.tier, revision.user_id) == (OLD, "agent_own", "alice")
    assert revision.reliability == pytest.approx(0.55)


def test_an_orm_update_of_every_revision_fails(api):
    observe(api, OLD)
    observe(api, NEW)
    with pytest.raises(DatabaseError), transaction.atomic():
        BeliefRevision.objects.update(value="rewritten")
    assert sorted(BeliefRevision.objects.values_list("value", flat=True)) == [OLD, NEW]


def test_every_observation_appends_one_revision_effective_or_not(api, web):
    observe(api, OLD)
    observe(web, NEW)
    observe(api, OLD)
    rows = list(BeliefRevision.objects.order_by("id").values_list("value", "channel", "effective"))
    assert rows == [(OLD, "agent-a", True), (NEW, "web-reader", False), (OLD, "agent-a", True)]
    assert verdict(api)["observation_count"] == 3

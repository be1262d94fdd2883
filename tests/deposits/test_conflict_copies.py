"""PostgreSQL's copies of the deposits of bags in conflict follow every write (deposits.sql.conflict_copies)."""

from __future__ import annotations

import pytest
from django.db import connection

from deposits.models import ConflictCopy
from deposits.services.deposits import deposit_retract
from deposits.sql.conflict_copies import FUNCTIONS, TRIGGERS, function_sql
from tests.deposits.functions import installed_body, spelled_body
from tests.deposits.scenario import correct, put, retract

pytestmark = pytest.mark.django_db

SCOPE = {"model": "m", "dataset": "d"}


def copied() -> dict[str, bool]:
    """Each copy's deposit id, and whether it is marked retracted."""
    return {
        str(pk): retracted is not None
        for pk, retracted in ConflictCopy.objects.values_list("pk", "retracted_at")
    }


def test_the_installed_trigger_functions_are_the_ones_the_code_spells(on_postgres):
    for name in FUNCTIONS:
        assert installed_body(name) == spelled_body(function_sql(name)), name
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT t.tgname FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid WHERE p.proname = ANY(%s)",
            [FUNCTIONS],
        )
        assert sorted(name for (name,) in cursor.fetchall()) == sorted(TRIGGERS)


def test_a_bag_is_copied_while_in_conflict_and_its_copies_follow_each_deposit(on_postgres):
    first = put("positive", "threshold holds", SCOPE)
    assert copied() == {}, "a bag of one polarity is not in conflict"
    second = put("negative", "threshold does not hold", SCOPE)
    assert copied() == {first: False, second: False}, "entering conflict copies what the bag holds"
    third = put("open", "threshold unclear", SCOPE)
    assert copied() == {first: False, second: False, third: False}, "a write into it is copied"
    retract(third)
    assert copied() == {first: False, second: False, third: True}, "a retraction marks its copy"
    correction = correct([second], "threshold holds after all", polarity="positive")
    assert copied() == {}, "a correction that ends the conflict drops the bag's copies"
    retract(correction)  # the negative it superseded is live again: in conflict once more
    assert copied() == {first: False, second: False, third: True, correction: True}
    deposit_retract(user_id="alice", deposit_id=third, mode="hard")
    assert copied() == {first: False, second: False, correction: True}, "an erasure deletes its copy"


@pytest.mark.skipif(connection.vendor == "postgresql", reason="SQLite's own rule")
def test_sqlite_keeps_no_copies():
    put("positive", "threshold holds", SCOPE)
    put("negative", "threshold does not hold", SCOPE)
    assert not ConflictCopy.objects.exists()

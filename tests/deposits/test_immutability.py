"""The database itself refuses to change a stored deposit, but for setting the soft-retract marker once."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from deposits.models import Deposit


@pytest.fixture
def deposit(api) -> Deposit:
    answer = api.post("/users/alice/deposits", {"content": "likes tea", "tags": ["drinks"]})
    return Deposit.objects.get(pk=answer.body["deposit"]["id"])


def run(sql: str, params: list) -> int:
    # A savepoint, so a refused statement leaves the test's transaction usable on PostgreSQL.
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def db_pk(deposit: Deposit) -> object:
    return Deposit._meta.pk.get_db_prep_value(deposit.pk, connection)


def db_now() -> object:
    return connection.ops.adapt_datetimefield_value(timezone.now())


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("content", "x"),
        ("polarity", "negative"),
        ("evidence_grade", "verified"),
        ("user_id", "mallory"),
        ("scope_model", "gpt-6"),
        ("channel", "human_review"),
        ("author", "someone else"),
        ("retracted_reason", "sneaky"),
    ],
)
def test_a_direct_sql_update_of_a_claim_column_fails(deposit, column, value):
    with pytest.raises(DatabaseError):
        run(f"UPDATE deposits_deposit SET {column} = %s WHERE id = %s", [value, db_pk(deposit)])
    deposit.refresh_from_db()
    assert (deposit.content, deposit.user_id, deposit.polarity) == ("likes tea", "alice", "open")


def test_an_update_of_every_row_fails_too(deposit):
    with pytest.raises(DatabaseError):
        run("UPDATE deposits_deposit SET content = %s", ["x"])
    assert Deposit.objects.get().content == "likes tea"


def test_the_orm_cannot_update_a_deposit_either(deposit):
    with pytest.raises(DatabaseError), transaction.atomic():
        Deposit.objects.filter(pk=deposit.pk).update(content="x")
    deposit.content = "x"
    with pytest.raises(DatabaseError), transaction.atomic():
        deposit.save()
    assert Deposit.objects.get().content == "likes tea"


def test_setting_the_retract_marker_once_is_allowed(deposit):
    updated = run(
        "UPDATE deposits_deposit SET retracted_at = %s, retracted_reason = %s WHERE id = %s",
        [db_now(), "wrong", db_pk(deposit)],
    )
    assert updated == 1
    deposit.refresh_from_db()
    assert deposit.retracted_at is not None
    assert deposit.retracted_reason == "wrong"


def test_changing_the_retract_marker_again_fails(deposit):
    pk = db_pk(deposit)
    run("UPDATE deposits_deposit SET retracted_at = %s WHERE id = %s", [db_now(), pk])
    first = Deposit.objects.get().retracted_at
    with pytest.raises(DatabaseError):
        run("UPDATE deposits_deposit SET retracted_at = %s WHERE id = %s", [db_now(), pk])
    with pytest.raises(DatabaseError):
        run("UPDATE deposits_deposit SET retracted_at = NULL WHERE id = %s", [pk])
    with pytest.raises(DatabaseError):
        run("UPDATE deposits_deposit SET retracted_reason = %s WHERE id = %s", ["changed", pk])
    assert Deposit.objects.get().retracted_at == first


def test_setting_the_marker_together_with_a_claim_column_fails(deposit):
    pk = db_pk(deposit)
    with pytest.raises(DatabaseError):
        run("UPDATE deposits_deposit SET retracted_at = %s, content = %s WHERE id = %s", [db_now(), "x", pk])
    deposit.refresh_from_db()
    assert (deposit.retracted_at, deposit.content) == (None, "likes tea")


@pytest.fixture
def with_refs(api) -> Deposit:
    answer = api.post(
        "/users/alice/deposits", {"content": "likes tea", "artifact_refs": ["s3://a", "s3://b"]}
    )
    return Deposit.objects.get(pk=answer.body["deposit"]["id"])


def test_dropping_artifact_refs_is_allowed_so_an_erasure_can_take_those_it_gave(with_refs):
    assert (
        run("UPDATE deposits_deposit SET artifact_refs = %s WHERE id = %s", ['["s3://b"]', db_pk(with_refs)])
        == 1
    )
    assert run("UPDATE deposits_deposit SET artifact_refs = %s WHERE id = %s", ["[]", db_pk(with_refs)]) == 1
    with_refs.refresh_from_db()
    assert with_refs.artifact_refs == []


@pytest.mark.parametrize(
    ("sql", "params"),
    [
        ("UPDATE deposits_deposit SET artifact_refs = %s WHERE id = %s", ['["s3://a", "s3://c"]']),
        ("UPDATE deposits_deposit SET artifact_refs = %s WHERE id = %s", ['{"s3://a": 1}']),
        ("UPDATE deposits_deposit SET artifact_refs = %s, content = 'x' WHERE id = %s", ['["s3://a"]']),
        ("UPDATE deposits_deposit SET artifact_refs = %s, bag_id = 'bag_x' WHERE id = %s", ['["s3://a"]']),
        (
            "UPDATE deposits_deposit SET artifact_refs = %s, retracted_reason = 'x' WHERE id = %s",
            ['["s3://a"]'],
        ),
    ],
)
def test_adding_a_ref_or_changing_anything_beside_dropping_them_fails(with_refs, sql, params):
    with pytest.raises(DatabaseError):
        run(sql, [*params, db_pk(with_refs)])
    with_refs.refresh_from_db()
    assert (with_refs.artifact_refs, with_refs.content) == (["s3://a", "s3://b"], "likes tea")

"""A database error from any layer answers as promised.

From Django or the driver alike: a lost connection is the 503 envelope with Retry-After and the next
request works; a refused row fails only its bulk item.
"""

from __future__ import annotations

import sqlite3

import psycopg
import pytest
from django.db import InterfaceError, OperationalError, connection
from django.db.backends.sqlite3.base import SQLiteCursorWrapper
from django.test import RequestFactory

from atlaso_site.api import api as ninja_api
from deposits.models import Deposit
from tests.conftest import make_client

PLUG = "pull the plug"
REFUSED = "refuse me"


def _assert_unavailable(answer) -> None:
    assert answer.status == 503
    assert answer.body == {
        "kind": "error",
        "error": {
            "code": "unavailable",
            "message": "the database is unavailable; retry later",
            "request_id": answer.headers["X-Request-ID"],
        },
    }
    assert answer.headers["Retry-After"] == "5"


def _bulk(*contents: str) -> dict:
    return {"items": [{"content": c, "idempotency_key": f"key-{i}"} for i, c in enumerate(contents)]}


@pytest.fixture
def backend_dies_on_plug(on_postgres):
    """The server ends this connection when a deposit reading PLUG is inserted.

    An AdminShutdown: the fault of a PostgreSQL restart, met by the raw psycopg cursor of the bulk
    insert.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            CREATE FUNCTION atlaso_test_plug() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF NEW.content = '{PLUG}' THEN PERFORM pg_terminate_backend(pg_backend_pid()); END IF;
                RETURN NEW;
            END $$;
            CREATE TRIGGER atlaso_test_plug BEFORE INSERT ON deposits_deposit
                FOR EACH ROW EXECUTE FUNCTION atlaso_test_plug();
            """
        )
    yield
    connection.close()
    with connection.cursor() as cursor:
        cursor.execute("DROP TRIGGER atlaso_test_plug ON deposits_deposit; DROP FUNCTION atlaso_test_plug();")


# Transactional: the connection really ends, so no test transaction can wrap it.
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("path", ["/users/alice/deposits", "/users/alice/deposits/bulk"])
def test_a_connection_ended_mid_write_is_503_and_the_next_request_reconnects(backend_dies_on_plug, path):
    api = make_client()
    body = _bulk("kept back", PLUG) if path.endswith("bulk") else {"content": PLUG}
    _assert_unavailable(api.post(path, body))
    assert api.post("/users/alice/deposits", {"content": "after the restart"}).status == 201
    assert list(Deposit.objects.values_list("content", flat=True)) == ["after the restart"]


@pytest.mark.django_db
def test_a_lost_sqlite_write_is_503_and_the_next_request_works(api, monkeypatch):
    if connection.vendor != "sqlite":
        pytest.skip("the PostgreSQL form is the test above")
    execute = SQLiteCursorWrapper.execute

    def failing(self, query, params=None):
        if query.startswith("INSERT INTO deposits_deposit") and PLUG in (params or ()):
            raise sqlite3.OperationalError("disk I/O error")
        return execute(self, query, params)

    monkeypatch.setattr(SQLiteCursorWrapper, "execute", failing)
    _assert_unavailable(api.post("/users/alice/deposits/bulk", _bulk("kept back", PLUG)))
    assert api.post("/users/alice/deposits", {"content": "after"}).status == 201
    assert list(Deposit.objects.values_list("content", flat=True)) == ["after"]


@pytest.fixture
def database_refuses_a_row(db):
    """The database refuses (an integrity error) any deposit reading REFUSED."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"""
                CREATE FUNCTION atlaso_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF NEW.content = '{REFUSED}' THEN
                        RAISE EXCEPTION 'refused by a test rule' USING ERRCODE = 'check_violation';
                    END IF;
                    RETURN NEW;
                END $$;
                CREATE TRIGGER atlaso_test_refuse BEFORE INSERT ON deposits_deposit
                    FOR EACH ROW EXECUTE FUNCTION atlaso_test_refuse();
                """
            )
        else:
            cursor.execute(
                f"""CREATE TRIGGER atlaso_test_refuse BEFORE INSERT ON deposits_deposit
                WHEN NEW.content = '{REFUSED}' BEGIN SELECT RAISE(ABORT, 'refused by a test rule'); END"""
            )


def test_a_row_the_database_refuses_fails_only_its_bulk_item(api, database_refuses_a_row):
    answer = api.post("/users/alice/deposits/bulk", _bulk("first", REFUSED, "third"))
    assert answer.status == 200
    assert [d["content"] for d in answer.body["committed"]] == ["first", "third"]
    (failure,) = answer.body["failed"]
    assert (failure["index"], failure["error"]["code"]) == (1, "validation_error")
    assert sorted(Deposit.objects.values_list("content", flat=True)) == ["first", "third"]


@pytest.mark.parametrize(
    "error",
    [
        psycopg.errors.AdminShutdown("terminating connection due to administrator command"),
        psycopg.OperationalError("connection failed: server closed the connection unexpectedly"),
        psycopg.InterfaceError("the connection is closed"),
        OperationalError("connection refused"),
        InterfaceError("connection already closed"),
    ],
)
def test_a_connection_error_of_any_layer_is_the_503_envelope(error):
    response = ninja_api.on_exception(RequestFactory().post("/api/v1/users/alice/deposits"), error)
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response.content.startswith(b'{"kind": "error", "error": {"code": "unavailable"')

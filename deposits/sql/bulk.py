"""Many rows in one statement, in the form each database parses fastest.

PostgreSQL gets COPY for a plain insert, else (ON CONFLICT, RETURNING) one array per column
through `unnest` (a few placeholders, whatever the row count: psycopg and the server re-parse
long VALUES lists on every call); SQLite gets a plain multi-row VALUES list.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

import psycopg
from django.db import connection

_EMPTY_JSON_LIST = "[]"
# COPY takes two round trips (the server must answer the COPY before the rows go), an INSERT one:
# below this many rows the INSERT's extra work per row costs less than the second trip.
COPY_MIN_ROWS = 8


def _json_text(value: object) -> str:
    # Most rows' tags and artifact_refs are empty: the same text without the encoder.
    if type(value) in (list, tuple) and not value:
        return _EMPTY_JSON_LIST
    return json.dumps(value)


def _preparer(pg_type: str) -> Callable[[object], object] | None:
    """How a Python value becomes what the driver wants for a column of `pg_type` (None: as is).

    Asked once per column and call: the connection proxy costs microseconds per lookup."""
    vendor, ops = connection.vendor, connection.ops
    if pg_type == "jsonb":
        return lambda value: None if value is None else _json_text(value)
    if pg_type == "timestamptz":
        adapt = ops.adapt_datetimefield_value
        return lambda value: adapt(value) if isinstance(value, datetime) else value
    if pg_type == "uuid" and vendor != "postgresql":
        # Django keeps UUIDs as 32 hex characters on SQLite
        return lambda value: value.hex if isinstance(value, uuid.UUID) else value
    return None


def _copy_rows(table: str, names: str, types: list[str], rows: Sequence[Sequence[object]]) -> None:
    """A plain INSERT done as COPY, far cheaper than one through unnest.

    psycopg formats the rows in C and the server skips the executor's per-row work (1,000 deposits:
    61 ms and 7 ms of client CPU, against 99 and 38 through unnest). Errors are Django's, as below.
    """
    prepared = [
        (i, prepare) for i, pg_type in enumerate(types) if (prepare := _preparer(pg_type)) is not None
    ]
    connection.ensure_connection()
    with (
        connection.wrap_database_errors,
        psycopg.Cursor(connection.connection) as cursor,
        cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy,
    ):
        write_row = copy.write_row
        if not prepared:
            for row in rows:
                write_row(row)
            return
        for row in rows:
            row = list(row)
            for i, prepare in prepared:
                row[i] = prepare(row[i])
            write_row(row)


def insert_rows(
    table: str,
    columns: Sequence[tuple[str, str]],
    rows: Sequence[Sequence[object]],
    suffix: str = "",
    *,
    copy: bool = True,
    derived: Mapping[str, str] | None = None,
) -> list[tuple]:
    """INSERT `rows` (values in `columns` order; each column is (name, PostgreSQL type)).

    `suffix` (ON CONFLICT …, RETURNING …) is appended; returned rows come back when it
    has a RETURNING clause. Without a suffix, PostgreSQL gets COPY_MIN_ROWS rows or more through
    COPY unless `copy` is false (the benchmark's floor is the spec's `unnest` INSERT). `derived`
    (PostgreSQL only) maps a column to the SQL that computes it from the value sent, `{}`
    standing for that value.
    """
    if not rows:
        return []
    if connection.vendor != "postgresql":
        if derived:
            raise ValueError("derived columns are computed by PostgreSQL only")
        return _insert_values(table, columns, rows, suffix)
    if copy and not (suffix or derived) and len(rows) >= COPY_MIN_ROWS:
        _copy_rows(table, _names(columns), [pg_type for _, pg_type in columns], rows)
        return []
    return _insert_unnest(table, columns, rows, suffix, derived or {})


def _names(columns: Sequence[tuple[str, str]]) -> str:
    return ", ".join(name for name, _ in columns)


def _insert_unnest(
    table: str,
    columns: Sequence[tuple[str, str]],
    rows: Sequence[Sequence[object]],
    suffix: str,
    derived: Mapping[str, str],
) -> list[tuple]:
    """PostgreSQL's INSERT … SELECT FROM unnest: one array per column, bound in binary."""
    sql = _unnest_sql(table, columns, suffix, derived)
    arrays = _column_arrays([pg_type for _, pg_type in columns], rows)
    # Django's cursors bind on the client, quoting every array element in Python; a plain
    # psycopg cursor on the same connection (same transaction) sends the arrays bound and
    # in binary instead. Django's error wrapper still applies: psycopg's errors become
    # Django's (a lost connection is an OperationalError, answered 503, and the connection
    # is marked for closing so the next request opens a new one; a refused row is an
    # IntegrityError, which the bulk write retries item by item).
    connection.ensure_connection()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, arrays, binary=True)
        return cursor.fetchall() if _returns_rows(suffix) else []


def _unnest_sql(
    table: str, columns: Sequence[tuple[str, str]], suffix: str, derived: Mapping[str, str]
) -> str:
    """The INSERT that reads one array parameter per column, a derived column computed in SQL."""
    names = _names(columns)
    # JSON travels as text and is cast per element (psycopg would otherwise guess). `%b`
    # sends each array in binary: `%s` let psycopg pick text for strings, and quote every
    # element after testing it against a regular expression.
    select = ", ".join("%b::text[]::jsonb[]" if t == "jsonb" else f"%b::{t}[]" for _, t in columns)
    if not derived:
        return f"INSERT INTO {table} ({names}) SELECT * FROM unnest({select}) {suffix}"
    values = ", ".join(derived.get(name, "{}").format(f"u.c{i}") for i, (name, _) in enumerate(columns))
    aliases = ", ".join(f"c{i}" for i in range(len(columns)))
    return f"INSERT INTO {table} ({names}) SELECT {values} FROM unnest({select}) AS u({aliases}) {suffix}"


def _column_arrays(types: list[str], rows: Sequence[Sequence[object]]) -> list[list[object]]:
    """The rows as one list per column, each value as the driver wants it for the column's type."""
    # Column by column: only the types _preparer changes are touched, value by value.
    preparers = [_preparer(pg_type) for pg_type in types]
    return [
        list(map(prepare, column)) if prepare is not None else list(column)
        for column, prepare in zip(zip(*rows, strict=True), preparers, strict=True)
    ]


def _insert_values(
    table: str, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[object]], suffix: str
) -> list[tuple]:
    """SQLite's INSERT: one multi-row VALUES list through Django's cursor."""
    preparers = [_preparer(pg_type) for _, pg_type in columns]
    params = [
        value if prepare is None else prepare(value)
        for row in rows
        for value, prepare in zip(row, preparers, strict=True)
    ]
    row = "(" + ", ".join(["%s"] * len(columns)) + ")"
    sql = f"INSERT INTO {table} ({_names(columns)}) VALUES {', '.join([row] * len(rows))} {suffix}"
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall() if _returns_rows(suffix) else []


def _returns_rows(suffix: str) -> bool:
    return "RETURNING" in suffix.upper()

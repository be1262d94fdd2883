"""What an import batch changes set-wise on PostgreSQL: retract markers, bag counts, bag keys.

The soft-retract markers it sets and the bags it counts again, each one statement for the whole
batch (SQLite takes the services' row-at-a-time path, deposits.services.bag_counts.bags_recount,
which the property tests hold these to), and its deposits' foreign key to their bags, checked once
for the batch.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

import psycopg
from django.db import IntegrityError, connection

from deposits.domain.types import DIRECTIONAL, POLARITIES
from deposits.sql.bulk import insert_rows
from deposits.sql.rules import live_sql

_LIVE_COLUMNS = [f"live_{p}" for p in POLARITIES]
# Each bag's counts from its non-retracted deposits, as bags_recount counts them: live ones by
# polarity with the newest live one's time, every one by polarity (the Resolution pillar's
# `kept`), and the superseded ones.
_COUNTS = ", ".join(
    [f"count(*) FILTER (WHERE d.live AND d.polarity = '{p}') AS live_{p}" for p in POLARITIES]
    + [
        f"max(d.created_at) FILTER (WHERE d.live AND d.polarity = '{p}') AS newest_{p}_at"
        for p in DIRECTIONAL
    ]
    + [f"count(*) FILTER (WHERE d.polarity = '{p}') AS kept_{p}" for p in DIRECTIONAL]
    + ["count(*) FILTER (WHERE NOT d.live) AS kept_superseded"]
)
_SET = ", ".join(
    [f"{c} = coalesce(c.{c}, 0)" for c in _LIVE_COLUMNS]
    + [f"newest_{p}_at = c.newest_{p}_at" for p in DIRECTIONAL]
    + [f"kept_{p} = coalesce(c.kept_{p}, 0)" for p in DIRECTIONAL]
    + ["kept_superseded = coalesce(c.kept_superseded, 0)"]
)
RECOUNT_SQL = f"""
WITH counts AS (
    SELECT d.bag_id, {_COUNTS}
    FROM (
        SELECT d.bag_id, d.polarity, d.created_at, ({live_sql("d", owner_param=True)}) AS live
        FROM deposits_deposit d
        WHERE d.user_id = %s AND d.bag_id = ANY(%s) AND d.retracted_at IS NULL
    ) d
    GROUP BY d.bag_id
)
UPDATE deposits_scopebag b SET {_SET}, updated_at = GREATEST(b.updated_at, %s)
FROM unnest(%s::text[]) AS ids(id) LEFT JOIN counts c ON c.bag_id = ids.id
WHERE b.id = ids.id
RETURNING {" + ".join(f"b.{c}" for c in _LIVE_COLUMNS)}
"""
RETRACT_SQL = (
    "UPDATE deposits_deposit d SET retracted_at = u.at, retracted_reason = u.reason "
    "FROM unnest(%s::uuid[], %s::timestamptz[], %s::text[]) AS u(id, at, reason) "
    "WHERE d.id = u.id AND d.retracted_at IS NULL"
)


def _execute(sql: str, params: Sequence[object]) -> list[tuple]:
    # Arrays bound on the server, as deposits.sql.bulk binds them (Django's cursor would quote
    # every element in Python); Django's error wrapper still applies.
    connection.ensure_connection()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, params, binary=True)
        return cursor.fetchall() if cursor.description else []


def rows(sql: str, params: Sequence[object]) -> list[tuple]:
    """A lookup's rows, its arrays bound on the server."""
    return _execute(sql, params)


def recount_bags(user_id: str, bag_ids: Sequence[str], now: datetime) -> int:
    """Count the bags again from their deposits in one statement, their rows locked first.

    The rows are locked in id order (as bags_recount locks them); returns how many more live
    deposits the bags hold.
    """
    ids = sorted(set(bag_ids))
    if not ids:
        return 0
    live = " + ".join(_LIVE_COLUMNS)
    before = _execute(
        f"SELECT {live} FROM deposits_scopebag WHERE id = ANY(%s) ORDER BY id FOR UPDATE", [ids]
    )
    after = _execute(RECOUNT_SQL, [user_id, user_id, ids, now, ids])
    return sum(row[0] for row in after) - sum(row[0] for row in before)


def retract_set(ids: Sequence[uuid.UUID], at: Sequence[datetime], reasons: Sequence[str]) -> None:
    """Set the soft-retract marker of deposits not retracted yet.

    It is the one change the database lets through after insert.
    """
    _execute(RETRACT_SQL, [list(ids), list(at), list(reasons)])


# The tables a COPY of deposits inserts into: the deposits, and the rows their insert triggers
# write (the conflict copies, the embedding backlog).
_COPIED_INTO = ("deposits_deposit", "deposits_conflictcopy", "deposits_embeddingpending")
# TRIGGER_TYPE_INSERT in pg_trigger.tgtype.
_ON_INSERT = 4
_MISSING_BAGS_SQL = (
    "SELECT b.id FROM unnest(%s::text[]) AS b(id) "
    "WHERE NOT EXISTS (SELECT 1 FROM deposits_scopebag s WHERE s.id = b.id) LIMIT 1"
)


def bag_keys_setwise() -> bool:
    """Whether this connection may write deposits with their key to their bag checked once a batch.

    As `copy_deposits` does: its role may set `session_replication_role`, and every trigger that
    fires on inserting into the tables the COPY writes fires in a `replica` session too
    (deposits/0031), so that the foreign-key checks are all the setting leaves out.
    """
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting('is_superuser') = 'on', current_setting('server_version_num')::int"
        )
        superuser, version = cursor.fetchone()
        if not superuser:
            if version < 150000:
                return False
            cursor.execute("SELECT has_parameter_privilege('session_replication_role', 'SET')")
            if not cursor.fetchone()[0]:
                return False
        tables = ", ".join(f"'{table}'::regclass" for table in _COPIED_INTO)
        cursor.execute(
            f"SELECT count(*) FROM pg_trigger WHERE tgrelid IN ({tables}) AND NOT tgisinternal "
            f"AND tgtype & {_ON_INSERT} <> 0 AND tgenabled <> 'A'"
        )
        return cursor.fetchone()[0] == 0


def copy_deposits(
    columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[object]], bag_ids: Sequence[str]
) -> None:
    """Insert an import batch's deposits, their foreign key to their bag checked once for the batch.

    The one check replaces a trigger per row (a fifth of the database's work per deposit).

    The COPY runs as `replica`, which leaves out PostgreSQL's foreign-key triggers and nothing else
    (`bag_keys_setwise`), then the batch's bags are looked up: the batch has just written each of
    them (bags_add_deposits), so each is there and locked by this transaction until it commits,
    and the lookup only says so. The embedding backlog's rows, which the deposits' trigger writes
    in the same statement, name the deposits it has just inserted.
    """
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = replica")
        insert_rows("deposits_deposit", columns, rows)
        cursor.execute("SET LOCAL session_replication_role = DEFAULT")
    missing = _execute(_MISSING_BAGS_SQL, [sorted(set(bag_ids))])
    if missing:
        raise IntegrityError(f"deposits name bag {missing[0][0]}, which is not there")

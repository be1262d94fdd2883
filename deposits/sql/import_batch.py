"""What an import batch changes set-wise on PostgreSQL: the soft-retract markers it sets and the
bags it counts again, each one statement for the whole batch (SQLite takes the services' row-at-a-
time path, deposits.services.bag_counts.bags_recount, which the property tests hold these to).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

import psycopg
from django.db import connection

from deposits.domain.types import DIRECTIONAL, POLARITIES
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
    """Count the bags again from their deposits in one statement, their rows locked first in id
    order (as bags_recount locks them); returns how many more live deposits they hold."""
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
    """Set the soft-retract marker of deposits not retracted yet (the one change the database
    lets through after insert)."""
    _execute(RETRACT_SQL, [list(ids), list(at), list(reasons)])

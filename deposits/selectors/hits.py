"""What recall shows of each hit it chose: the deposit, its bag's statistics, its conflict peers.

The peers are the live opposing deposits of its bag, newest first, at most 50.

On PostgreSQL one call of a function whose plan the connection keeps reads all of it, peers and
the hits' belief states included; elsewhere the ORM reads the records, edges, bags and peers in
four queries. Either way the rules are the domain's:
`peer_polarities` in Python, `dominant_sql` (pinned to it by a test) in SQL.
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from types import SimpleNamespace
from typing import Any

from django.db import connection

from beliefs.models import Belief
from deposits.domain.bags import MAX_CONFLICT_PEERS, BagStats, peer_polarities
from deposits.domain.types import DIRECTIONAL, POLARITIES
from deposits.domain.types import Deposit as DepositRecord
from deposits.models import Deposit
from deposits.selectors.bags import bag_stats, newest_live_claims, stats_of
from deposits.selectors.deposits import deposit_records, record_from_row
from deposits.sql.rules import dominant_sql, in_conflict_sql, live_sql


@dataclass(frozen=True, slots=True)
class HitDetail:
    record: DepositRecord
    stats: BagStats
    conflict_peers: tuple[str, ...] = ()
    # The stored state of the hit's belief (None: it carries none, or the belief is gone), when
    # `belief_read`; else the caller reads the verdict itself.
    belief_state: dict | None = None
    belief_read: bool = False


def hit_details(user_id: str, hit_ids: Sequence[str]) -> dict[str, HitDetail]:
    """Each hit's record, bag statistics and conflict peers; ids the owner does not hold are absent."""
    if not hit_ids:
        return {}
    if connection.vendor == "postgresql":
        return _in_one_statement(user_id, hit_ids)
    return _through_the_orm(user_id, hit_ids)


# --- PostgreSQL: one statement ----------------------------------------------------------------

_DEPOSIT_FIELDS = [
    field.attname
    for field in Deposit._meta.concrete_fields
    if field.attname not in {"search_vector", "retracted_at", "retracted_reason"}
]
_BAG_FIELDS = [
    *(f"live_{polarity}" for polarity in POLARITIES),
    *(f"newest_{polarity}_at" for polarity in DIRECTIONAL),
]
_DIRECTIONAL_LIST = ", ".join(f"'{polarity}'" for polarity in DIRECTIONAL)


# PostgreSQL reads the details through a function whose plan it keeps (a generic plan, made once
# per connection: the statement looks rows up by primary key, so the parameters' values change
# nothing), where a statement of its own was planned on every recall (0.4-1 ms).
# A hit's peers: the polarities `peer_polarities` names. Those are the directional ones other
# than the hit's own (an open hit: other than the bag's dominant one) that the bag holds live,
# and a polarity the bag holds no live deposit of adds no row, so the last condition needs no SQL.
# The belief's stored state comes along for a hit that carries one, so its verdict needs no query.
DETAILS_FUNCTION = "atlaso_hit_details"


def details_function_sql() -> str:
    """The function `_DETAILS_SQL` calls, as the migrations create it (a test holds the two equal)."""
    bag_columns = ", ".join(
        f"{name} {'timestamptz' if name.startswith('newest') else 'integer'}" for name in _BAG_FIELDS
    )
    return f"""CREATE OR REPLACE FUNCTION {DETAILS_FUNCTION}(owner text, hit_ids uuid[])
RETURNS TABLE (deposit deposits_deposit, {bag_columns}, contradicts text[], peers text[], belief_state jsonb)
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan
AS $function${_DETAILS_BODY}$function$"""


_DETAILS_BODY = f"""
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT d, {", ".join(f"bag.{name}" for name in _BAG_FIELDS)},
           ARRAY(
               SELECT c.old_deposit_id::text FROM deposits_contradiction c
               WHERE c.new_deposit_id = d.id ORDER BY c.created_at, c.id
           ),
           CASE WHEN {in_conflict_sql("bag")} THEN ARRAY(
               SELECT p.id::text FROM deposits_deposit p
               WHERE p.user_id = d.user_id AND p.bag_id = d.bag_id AND p.id <> d.id
                 AND p.polarity IN ({_DIRECTIONAL_LIST})
                 AND p.polarity <> (CASE WHEN d.polarity = 'open' THEN {dominant_sql("bag")} ELSE d.polarity END)
                 AND {live_sql("p")}
               ORDER BY p.created_at DESC, p.id DESC
               LIMIT {MAX_CONFLICT_PEERS}
           ) END,
           CASE WHEN d.belief_key IS NOT NULL THEN (
               SELECT b.state FROM {Belief._meta.db_table} b WHERE b.user_id = d.user_id AND b.key = d.belief_key
           ) END
    -- By primary key, driven by the ids, the owner only a filter (`|| ''` keeps it out of the
    -- index conditions): a generic plan would otherwise AND the owner's whole user_id index
    -- (100,000 entries for the largest owner) with them.
    FROM unnest(hit_ids) AS hit(id)
    JOIN deposits_deposit d ON d.id = hit.id
    JOIN deposits_scopebag bag ON bag.id = d.bag_id
    WHERE d.user_id || '' = owner;
END
"""


# Each hit's deposit row, its bag's counts, the ids it contradicts, its conflict peers and its
# belief's state; parameters: the owner, the hits' ids.
_DETAILS_SQL = f"""
SELECT {", ".join(f"(h.deposit).{name}::text" if name == "id" else f"(h.deposit).{name}" for name in _DEPOSIT_FIELDS)},
       {", ".join(f"h.{name}" for name in _BAG_FIELDS)}, h.contradicts, h.peers, h.belief_state
FROM {DETAILS_FUNCTION}(%s, %s::uuid[]) h
"""


_ID = _DEPOSIT_FIELDS.index("id")
# The columns whose field turns the database's value into Python's (the JSON lists).
_CONVERTERS = [
    (index, field.from_db_value)
    for index, field in enumerate(Deposit._meta.get_field(name) for name in _DEPOSIT_FIELDS)
    if hasattr(field, "from_db_value")
]


def _in_one_statement(user_id: str, hit_ids: Sequence[str]) -> dict[str, HitDetail]:
    with connection.cursor() as cursor:
        cursor.execute(_DETAILS_SQL, [user_id, [uuid.UUID(hit_id) for hit_id in hit_ids]])
        rows = cursor.fetchall()
    return dict(_detail_from_row(row) for row in rows)


def _detail_from_row(row: Sequence[Any]) -> tuple[str, HitDetail]:
    """A row of `_DETAILS_SQL` as (deposit id, its detail)."""
    width = len(_DEPOSIT_FIELDS)
    values = list(row[:width])
    for index, convert in _CONVERTERS:
        values[index] = convert(values[index], None, connection)
    # The row's columns under the model's names: record_from_row and stats_of read only those,
    # and a model instance per hit cost more than the rest of this loop.
    deposit = SimpleNamespace(pk=values[_ID], **dict(zip(_DEPOSIT_FIELDS, values, strict=True)))
    bag = SimpleNamespace(**dict(zip(_BAG_FIELDS, row[width : width + len(_BAG_FIELDS)], strict=True)))
    stats = stats_of(bag)  # type: ignore[arg-type]
    contradicts, peers, belief_state = row[width + len(_BAG_FIELDS) : width + len(_BAG_FIELDS) + 3]
    if isinstance(belief_state, str):  # Django has psycopg hand jsonb over as text
        belief_state = json.loads(belief_state)
    record = record_from_row(deposit, contradicts=contradicts)  # type: ignore[arg-type]
    return record.id, HitDetail(record, stats, tuple(peers or ()), belief_state, belief_read=True)


# --- Elsewhere: the ORM -----------------------------------------------------------------------


def _through_the_orm(user_id: str, hit_ids: Sequence[str]) -> dict[str, HitDetail]:
    # By primary key alone: SQLite without statistics would walk the owner's user_id index
    # instead (28 ms for ten hits of a 100,000-deposit owner). The check keeps the owner's own.
    rows = [row for row in Deposit.objects.filter(id__in=hit_ids) if row.user_id == user_id]
    records = deposit_records(rows)
    stats = bag_stats({row.bag_id for row in rows})
    peers = _peers(user_id, [(row, stats[row.bag_id]) for row in rows])
    return {
        record.id: HitDetail(record, stats[row.bag_id], peers.get(record.id, ()))
        for row, record in zip(rows, records, strict=True)
    }


def _peers(user_id: str, hits: Iterable[tuple[Deposit, BagStats]]) -> dict[str, tuple[str, ...]]:
    """Conflict peers per hit id: live opposing deposits of its bag, newest first, at most 50."""
    in_conflict = [
        (str(row.pk), row.bag_id, row.polarity, stats) for row, stats in hits if stats.has_disagreement
    ]
    if not in_conflict:
        return {}
    rows = newest_live_claims(
        owners=[user_id], bag_ids={bag for _, bag, _, _ in in_conflict}, per_side=MAX_CONFLICT_PEERS
    ).values_list("id", "bag_id", "polarity", "created_at")
    by_bag: dict[str, list[tuple[datetime, str, str]]] = defaultdict(list)
    for deposit_id, bag, polarity, created_at in rows:
        by_bag[bag].append((created_at, str(deposit_id), polarity))
    return {
        hit_id: _newest_opposing(by_bag[bag], hit_id, set(peer_polarities(stats, polarity)))
        for hit_id, bag, polarity, stats in in_conflict
    }


def _newest_opposing(
    claims: list[tuple[datetime, str, str]], hit_id: str, wanted: set[str]
) -> tuple[str, ...]:
    """The ids of a bag's newest claims of the `wanted` polarities, at most MAX_CONFLICT_PEERS.

    `claims` are (created_at, id, polarity); the hit itself is left out.
    """
    newest_first = sorted((row for row in claims if row[2] in wanted and row[1] != hit_id), reverse=True)
    return tuple(deposit_id for _, deposit_id, _ in newest_first[:MAX_CONFLICT_PEERS])


__all__ = ["DETAILS_FUNCTION", "HitDetail", "details_function_sql", "hit_details"]

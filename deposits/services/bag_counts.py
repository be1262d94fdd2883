"""Keeping each scope bag's live counts right, inside the transaction of every write."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import OperationalError, connection, transaction
from django.db.models import Count, Exists, Max, OuterRef, Value
from django.db.models.functions import Greatest
from django.utils import timezone

from deposits.domain.types import DIRECTIONAL, Scope, is_live
from deposits.models import BagTerms, ConflictEpisode, Deposit, ScopeBag, is_superseded
from deposits.search.postgres import TS_CONFIG
from deposits.sql import bag_terms
from deposits.sql.bulk import insert_rows
from deposits.sql.rules import in_conflict_stored_sql, live_sql


def _newer(column: str) -> str:
    # Portable GREATEST that treats NULL as "nothing yet" (SQLite's MAX() returns NULL).
    return (
        f"CASE WHEN deposits_scopebag.{column} IS NULL OR deposits_scopebag.{column} < excluded.{column} "
        f"THEN excluded.{column} ELSE deposits_scopebag.{column} END"
    )


BAG_COLUMNS = (
    ("id", "text"), ("user_id", "text"), ("model", "text"), ("dataset", "text"), ("env", "text"),
    ("version", "text"), ("n", "bigint"), ("seed", "bigint"),
    ("live_positive", "integer"), ("live_negative", "integer"), ("live_cautionary", "integer"), ("live_open", "integer"),
    ("newest_positive_at", "timestamptz"), ("newest_negative_at", "timestamptz"), ("newest_cautionary_at", "timestamptz"),
    ("kept_positive", "integer"), ("kept_negative", "integer"), ("kept_cautionary", "integer"), ("kept_superseded", "integer"),
    ("last_deposit_at", "timestamptz"), ("created_at", "timestamptz"), ("updated_at", "timestamptz"),
)  # fmt: skip
_ON_CONFLICT = f"""
ON CONFLICT (id) DO UPDATE SET
    live_positive = deposits_scopebag.live_positive + excluded.live_positive,
    live_negative = deposits_scopebag.live_negative + excluded.live_negative,
    live_cautionary = deposits_scopebag.live_cautionary + excluded.live_cautionary,
    live_open = deposits_scopebag.live_open + excluded.live_open,
    kept_positive = deposits_scopebag.kept_positive + excluded.kept_positive,
    kept_negative = deposits_scopebag.kept_negative + excluded.kept_negative,
    kept_cautionary = deposits_scopebag.kept_cautionary + excluded.kept_cautionary,
    newest_positive_at = {_newer("newest_positive_at")},
    newest_negative_at = {_newer("newest_negative_at")},
    newest_cautionary_at = {_newer("newest_cautionary_at")},
    last_deposit_at = {_newer("last_deposit_at")},
    updated_at = {_newer("updated_at")}
"""


def _later(moment: datetime | None, other: datetime) -> datetime:
    return other if moment is None or other > moment else moment


def _bag_params(
    bag_id: str, user_id: str, scope: Scope, polarities: Sequence[tuple[str, datetime]], now: datetime
) -> list[object] | None:
    """The upsert's values for one bag, or None with no deposit to add.

    Its live and kept counts by polarity, each directional polarity's newest deposit, and the
    newest of all.
    """
    counts = {p: 0 for p in (*DIRECTIONAL, "open")}
    newest: dict[str, datetime | None] = {p: None for p in DIRECTIONAL}
    for polarity, created_at in polarities:
        counts[polarity] += 1
        if polarity in newest:
            newest[polarity] = _later(newest[polarity], created_at)
    last = max((created_at for _, created_at in polarities), default=None)
    if last is None:
        return None
    return [
        bag_id, user_id, *scope.facets,
        counts["positive"], counts["negative"], counts["cautionary"], counts["open"],
        *(newest[p] for p in DIRECTIONAL),
        counts["positive"], counts["negative"], counts["cautionary"], 0,
        last, now, now,
    ]  # fmt: skip


@dataclass
class NewDeposits:
    """What a write adds to one bag: its scope, each deposit's polarity and time, and its text."""

    scope: Scope
    polarities: list[tuple[str, datetime]] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)


def search_text(content: str, note: str | None) -> str:
    """The text a deposit is found by: its content and scope note (as the search index has it)."""
    return f"{content} {note or ''}"


def bags_add_deposits(
    *, user_id: str, bags: Mapping[str, NewDeposits], now: datetime | None = None
) -> set[str]:
    """Count new live deposits into their bags, creating bag rows on first use.

    Returns the bags now in conflict, read from the rows the upsert wrote, which this write now
    locks.

    One atomic upsert for every bag, in id order: concurrent writers to one bag serialise on
    its row, and two batches touching the same bags cannot deadlock. On PostgreSQL the same
    statement adds the deposits' lexemes, so each bag row is written once per write.
    """
    now = now or timezone.now()
    order, rows, texts = [], [], []
    for bag_id in sorted(bags):
        new = bags[bag_id]
        if (values := _bag_params(bag_id, user_id, new.scope, new.polarities, now)) is not None:
            order.append(bag_id)
            rows.append(values)
            texts.append(" ".join(new.texts))
    if connection.vendor != "postgresql":
        return _in_conflict(insert_rows("deposits_scopebag", BAG_COLUMNS, rows, _ON_CONFLICT + _RETURNING))
    columns, with_texts = (
        (*BAG_COLUMNS, ("live_terms", "text")),
        [(*v, t) for v, t in zip(rows, texts, strict=True)],
    )
    if all(_text_fits(text) for text in texts):
        # A bag whose lexemes would outgrow a tsvector is marked by the statement itself
        # (TERMS_ADD_FUNCTION): one round trip, no savepoint around it.
        return _in_conflict(
            insert_rows(
                "deposits_scopebag", columns, with_texts, _ON_CONFLICT + _ADD_TERMS_GUARDED + _RETURNING,
                derived={"live_terms": _TERMS_OF_TEXT},
            )
        )  # fmt: skip
    # A text this long could overflow a tsvector on its own, before any bag's lexemes are added.
    try:
        with transaction.atomic():
            return _in_conflict(
                insert_rows(
                    "deposits_scopebag",
                    columns,
                    with_texts,
                    _ON_CONFLICT + _ADD_TERMS_ON_CONFLICT + _RETURNING,
                    derived={"live_terms": _TERMS_OF_TEXT},
                )
            )
    except OperationalError as error:
        if getattr(error.__cause__, "sqlstate", None) != PROGRAM_LIMIT_EXCEEDED:
            raise
    # Some bag's lexemes would outgrow a tsvector: the counts first, then the lexemes bag by bag.
    returned = insert_rows("deposits_scopebag", BAG_COLUMNS, rows, _ON_CONFLICT + _RETURNING)
    _guarded_terms_update(_ADD_TERMS_SQL, order, [order, texts], lambda i: [[order[i]], [texts[i]]])
    return _in_conflict(returned)


def _in_conflict(returned: Iterable[tuple[str, object]]) -> set[str]:
    return {bag_id for bag_id, conflict in returned if conflict}


TERMS_ADD_FUNCTION = "atlaso_terms_add"
_RETURNING = f" RETURNING id, {in_conflict_stored_sql('deposits_scopebag')}"
_TERMS_OF_TEXT = f"strip(to_tsvector('{TS_CONFIG}', {{}}))"
# A bag's lexemes are lost (NULL) once they outgrew a tsvector in one write; `terms_overflow` alone
# (lexemes not NULL) says some lie in its chunks (deposits.sql.bag_terms), and a proposed row's
# own lexemes may have gone there already (the trigger runs before the conflict is seen).
# What _ADD_TERMS_SQL does, as part of the counts' upsert (a new bag's row is inserted with them).
_ADD_TERMS_ON_CONFLICT = (
    ", live_terms = CASE WHEN deposits_scopebag.terms_overflow AND deposits_scopebag.live_terms IS NULL "
    "THEN NULL ELSE coalesce(deposits_scopebag.live_terms, ''::tsvector) || excluded.live_terms END"
    ", terms_overflow = deposits_scopebag.terms_overflow OR excluded.terms_overflow"
)
# The same, with a bag whose lexemes would outgrow a tsvector marked instead of failing the write.
_ADD_TERMS_GUARDED = (
    ", (live_terms, terms_overflow) = (SELECT t, t IS NULL OR deposits_scopebag.terms_overflow "
    f"OR excluded.terms_overflow FROM {TERMS_ADD_FUNCTION}(deposits_scopebag.terms_overflow "
    "AND deposits_scopebag.live_terms IS NULL, deposits_scopebag.live_terms, excluded.live_terms) AS t)"
)
_ADD_TERMS_SQL = (
    "UPDATE deposits_scopebag b SET live_terms = coalesce(b.live_terms, ''::tsvector) "
    f"|| strip(to_tsvector('{TS_CONFIG}', u.text)) FROM unnest(%s::text[], %s::text[]) AS u(id, text) "
    "WHERE b.id = u.id AND NOT (b.terms_overflow AND b.live_terms IS NULL)"
)
_REFRESH_TERMS_SQL = (
    "UPDATE deposits_scopebag b SET terms_overflow = false, live_terms = ("
    f"  SELECT strip(to_tsvector('{TS_CONFIG}', string_agg(d.content || ' ' || coalesce(d.scope_note, ''), ' ')))"
    f"  FROM deposits_deposit d WHERE d.user_id = b.user_id AND d.bag_id = b.id AND {live_sql('d')}"
    ") WHERE {where}"
)
_REFRESH_ALL_TERMS_SQL = (
    "UPDATE deposits_scopebag b SET terms_overflow = false, live_terms = s.terms FROM ("
    f"  SELECT d.bag_id, strip(to_tsvector('{TS_CONFIG}', string_agg(d.content || ' ' || coalesce(d.scope_note, ''), ' '))) AS terms"
    f"  FROM deposits_deposit d WHERE d.user_id LIKE %s AND {live_sql('d')}"
    "  GROUP BY d.bag_id) s WHERE b.id = s.bag_id AND b.user_id LIKE %s"
)
# PostgreSQL's SQLSTATE for "string is too long for tsvector" (a tsvector holds at most 1 MB).
PROGRAM_LIMIT_EXCEEDED = "54000"
# A text of at most this many bytes cannot overflow a tsvector by itself: its lexemes are some of
# its words, lower-cased (which grows a UTF-8 character by at most half) and stemmed.
_FITTING_TEXT_BYTES = 600_000


def terms_add_function_sql() -> str:
    """A bag's lexemes with a write's added, or NULL once they would outgrow a tsvector.

    NULL too once they had: the counts' upsert marks such a bag in the same statement. As
    deposits/0017 creates it; a test holds the two equal.
    """
    return f"""CREATE OR REPLACE FUNCTION {TERMS_ADD_FUNCTION}(overflow boolean, old tsvector, new tsvector)
RETURNS tsvector LANGUAGE plpgsql IMMUTABLE
AS $function${_TERMS_ADD_BODY}$function$"""


_TERMS_ADD_BODY = """
BEGIN
    IF overflow THEN
        RETURN NULL;
    END IF;
    RETURN coalesce(old, ''::tsvector) || new;
EXCEPTION WHEN program_limit_exceeded THEN
    RETURN NULL;
END
"""


def _text_fits(text: str) -> bool:
    return len(text) * 4 <= _FITTING_TEXT_BYTES or len(text.encode()) <= _FITTING_TEXT_BYTES


def _guarded_terms_update(
    sql: str,
    bag_ids: list[str],
    params: list[object],
    one: Callable[[int], list[object]],
    fallback_sql: str | None = None,
    *,
    whole: tuple[str, list[object]] | None = None,
) -> None:
    """Run a lexeme update; a bag whose lexemes would outgrow a tsvector is marked instead.

    Such a bag is rare (thousands of deposits of distinct words in one write) and still found:
    recall falls back to its deposits' own index for it. `whole`: the update writes the bags'
    lexemes whole (a recount), so their chunks are forgotten first (this statement picks them),
    in the same savepoint.
    """
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            if whole is not None:
                cursor.execute(*whole)
            cursor.execute(sql, params)
        return
    except OperationalError as error:
        if getattr(error.__cause__, "sqlstate", None) != PROGRAM_LIMIT_EXCEEDED:
            raise
    for index, bag_id in enumerate(bag_ids):
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                if whole is not None:
                    cursor.execute(_FORGET_ONE, [bag_id])
                cursor.execute(fallback_sql or sql, one(index))
        except OperationalError as error:
            if getattr(error.__cause__, "sqlstate", None) != PROGRAM_LIMIT_EXCEEDED:
                raise
            with connection.cursor() as cursor:
                cursor.execute(_FORGET_ONE, [bag_id])
                cursor.execute(
                    "UPDATE deposits_scopebag SET live_terms = NULL, terms_overflow = true WHERE id = %s",
                    [bag_id],
                )


_FORGET_ONE = bag_terms.forget_sql("t.bag_id = %s")


def bag_terms_refresh(*, bag_ids: Iterable[str] | None = None, user_prefix: str | None = None) -> None:
    """Recompute the lexemes of bags' live deposits into each bag's row and chunks, exactly.

    PostgreSQL only (SQLite searches deposits); the row and chunks are kept by
    deposits.sql.bag_terms.
    """
    if connection.vendor != "postgresql":
        return
    if bag_ids is not None:
        ids = sorted(set(bag_ids))
        sql = _REFRESH_TERMS_SQL.format(where="b.id = ANY(%s)")
        whole = (bag_terms.forget_sql("t.bag_id = ANY(%s)"), [ids])
        _guarded_terms_update(sql, ids, [ids], lambda i: [[ids[i]]], whole=whole)
        return
    # Every bag of many owners (the benchmark loader): one grouped pass over their deposits.
    like = f"{user_prefix or ''}%"
    ids = list(
        ScopeBag.objects.filter(user_id__startswith=user_prefix or "")
        .order_by("id")
        .values_list("id", flat=True)
    )
    single = _REFRESH_TERMS_SQL.format(where="b.id = ANY(%s)")
    _guarded_terms_update(
        _REFRESH_ALL_TERMS_SQL,
        ids,
        [like, like],
        lambda i: [[ids[i]]],
        fallback_sql=single,
        whole=(bag_terms.forget_sql("t.user_id LIKE %s"), [like]),
    )


def _empty_counts() -> dict[str, object]:
    """A bag's recounted columns before any of its deposits is counted."""
    return {
        **{f"live_{p}": 0 for p in (*DIRECTIONAL, "open")},
        **{f"kept_{p}": 0 for p in DIRECTIONAL},
        **{f"newest_{p}_at": None for p in DIRECTIONAL},
        "kept_superseded": 0,
    }


def _count_into(values: dict[str, object], row: Mapping[str, Any]) -> None:
    """Add one (polarity, superseded) group of a bag's kept deposits to its recounted columns."""
    polarity = row["polarity"]
    if not is_live(retracted=False, superseded=row["superseded"]):
        values["kept_superseded"] += row["count"]  # type: ignore[operator]
    else:
        values[f"live_{polarity}"] += row["count"]  # type: ignore[operator]
        if polarity in DIRECTIONAL:
            values[f"newest_{polarity}_at"] = row["newest"]
    if polarity in DIRECTIONAL:
        values[f"kept_{polarity}"] += row["count"]  # type: ignore[operator]


def bags_recount(bag_ids: Iterable[str], *, user_id: str, now: datetime | None = None) -> int:
    """Recount bags from their deposits after a supersession, retraction or erasure.

    Returns how many more live deposits they hold than before, for the owner's tally.

    The rows are locked first (in id order, so two recounts cannot deadlock); the counting
    query then starts after any concurrent insert into the bag has committed.
    """
    ids = sorted(set(bag_ids))
    if not ids:
        return 0
    live_columns = [f"live_{p}" for p in (*DIRECTIONAL, "open")]
    before = sum(
        sum(row)
        for row in ScopeBag.objects.select_for_update()
        .filter(id__in=ids)
        .order_by("id")
        .values_list(*live_columns)
    )
    rows = (
        # The owner too: the deposit indexes lead with user_id (a bag holds one owner's deposits).
        Deposit.objects.filter(user_id=user_id, bag_id__in=ids)
        .not_retracted()
        .annotate(superseded=is_superseded())
        .values("bag_id", "polarity", "superseded")
        .annotate(count=Count("id"), newest=Max("created_at"))
    )
    fresh: dict[str, dict[str, object]] = defaultdict(_empty_counts)
    for row in rows:
        _count_into(fresh[row["bag_id"]], row)
    now = now or timezone.now()
    for bag_id in ids:
        # Never back in time: a write that took its clock before a concurrent one may commit after it.
        ScopeBag.objects.filter(id=bag_id).update(
            **fresh[bag_id], updated_at=Greatest("updated_at", Value(now))
        )
    bag_terms_refresh(bag_ids=ids)
    return sum(fresh[bag_id][column] for bag_id in ids for column in live_columns) - before  # type: ignore[misc]


def bags_forget_emptied(bag_ids: Iterable[str], *, user_id: str) -> list[str]:
    """Delete the bags among `bag_ids` that no deposit is in any more; returns their ids.

    An erasure took their last deposit; their conflict episodes, claims, skips and lexeme chunks go
    with them.

    A bag row holds its deposits' scope values, and its id is their hash: once no deposit holds
    them, nothing may, so the bag reads as one never written (404). A later deposit of the same
    scope makes it again. Runs after the recount and episodes of the erasure, under their locks.
    """
    emptied = list(
        ScopeBag.objects.filter(user_id=user_id, id__in=set(bag_ids))
        .exclude(Exists(Deposit.objects.filter(user_id=user_id, bag_id=OuterRef("pk"))))
        .values_list("id", flat=True)
    )
    if emptied:
        ConflictEpisode.objects.filter(user_id=user_id, bag_id__in=emptied).delete()
        BagTerms.objects.filter(bag_id__in=emptied).delete()
        # Its claims and skips go with it (on_delete); no resolution is left: its deposit was in the bag.
        ScopeBag.objects.filter(id__in=emptied).delete()
    return emptied

"""Keeping each scope bag's live counts right, inside the transaction of every write."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime

from django.db import connection
from django.db.models import Count, Exists, Max, OuterRef
from django.utils import timezone

from deposits.domain.types import DIRECTIONAL, Scope
from deposits.models import Contradiction, Deposit, ScopeBag


def _db_time(moment: datetime) -> object:
    """A datetime as the database stores it, for raw SQL (SQLite keeps naive UTC text)."""
    return connection.ops.adapt_datetimefield_value(moment)


def _newer(column: str) -> str:
    # Portable GREATEST that treats NULL as "nothing yet" (SQLite's MAX() returns NULL).
    return (
        f"CASE WHEN deposits_scopebag.{column} IS NULL OR deposits_scopebag.{column} < excluded.{column} "
        f"THEN excluded.{column} ELSE deposits_scopebag.{column} END"
    )


_COLUMNS = """
    id, user_id, model, dataset, env, version, n, seed,
    live_positive, live_negative, live_cautionary, live_open,
    newest_positive_at, newest_negative_at, newest_cautionary_at,
    kept_positive, kept_negative, kept_cautionary, kept_superseded,
    last_deposit_at, created_at, updated_at
"""
_ROW = "(" + ", ".join(["%s"] * 22) + ")"
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
    updated_at = excluded.updated_at
"""


def _bag_params(bag_id: str, user_id: str, scope: Scope, polarities: Iterable[tuple[str, datetime]], now: datetime) -> list[object] | None:
    counts = {p: 0 for p in (*DIRECTIONAL, "open")}
    newest: dict[str, datetime | None] = {p: None for p in DIRECTIONAL}
    last: datetime | None = None
    for polarity, created_at in polarities:
        counts[polarity] += 1
        if polarity in newest and (newest[polarity] is None or created_at > newest[polarity]):
            newest[polarity] = created_at
        if last is None or created_at > last:
            last = created_at
    if last is None:
        return None
    return [
        bag_id, user_id, *scope.facets,
        counts["positive"], counts["negative"], counts["cautionary"], counts["open"],
        *(_db_time(newest[p]) if newest[p] else None for p in DIRECTIONAL),
        counts["positive"], counts["negative"], counts["cautionary"], 0,
        _db_time(last), _db_time(now), _db_time(now),
    ]  # fmt: skip


def bags_add_deposits(*, user_id: str, bags: Mapping[str, tuple[Scope, list[tuple[str, datetime]]]]) -> None:
    """Count new live deposits into their bags, creating bag rows on first use.

    One atomic upsert for every bag, in id order: concurrent writers to one bag serialise on
    its row, and two batches touching the same bags cannot deadlock.
    """
    now = timezone.now()
    params: list[object] = []
    rows = 0
    for bag_id in sorted(bags):
        scope, polarities = bags[bag_id]
        values = _bag_params(bag_id, user_id, scope, polarities, now)
        if values is not None:
            params += values
            rows += 1
    if not rows:
        return
    sql = f"INSERT INTO deposits_scopebag ({_COLUMNS}) VALUES {', '.join([_ROW] * rows)} {_ON_CONFLICT}"
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def bags_recount(bag_ids: Iterable[str]) -> None:
    """Recount bags from their deposits after a supersession, retraction or erasure.

    The rows are locked first (in id order, so two recounts cannot deadlock); the counting
    query then starts after any concurrent insert into the bag has committed.
    """
    ids = sorted(set(bag_ids))
    if not ids:
        return
    list(ScopeBag.objects.select_for_update().filter(id__in=ids).values_list("id", flat=True))
    rows = (
        Deposit.objects.filter(bag_id__in=ids, retracted_at__isnull=True)
        .annotate(superseded=Exists(Contradiction.objects.filter(old_deposit=OuterRef("pk"))))
        .values("bag_id", "polarity", "superseded")
        .annotate(count=Count("id"), newest=Max("created_at"))
    )
    fresh: dict[str, dict[str, object]] = defaultdict(
        lambda: {
            **{f"live_{p}": 0 for p in (*DIRECTIONAL, "open")},
            **{f"kept_{p}": 0 for p in DIRECTIONAL},
            **{f"newest_{p}_at": None for p in DIRECTIONAL},
            "kept_superseded": 0,
        }
    )
    for row in rows:
        values = fresh[row["bag_id"]]
        polarity = row["polarity"]
        if row["superseded"]:
            values["kept_superseded"] += row["count"]  # type: ignore[operator]
        else:
            values[f"live_{polarity}"] += row["count"]  # type: ignore[operator]
            if polarity in DIRECTIONAL:
                values[f"newest_{polarity}_at"] = row["newest"]
        if polarity in DIRECTIONAL:
            values[f"kept_{polarity}"] += row["count"]  # type: ignore[operator]
    now = timezone.now()
    for bag_id in ids:
        ScopeBag.objects.filter(id=bag_id).update(**fresh[bag_id], updated_at=now)

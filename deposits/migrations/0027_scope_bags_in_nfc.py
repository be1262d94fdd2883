"""Scope facet values are compared and grouped in Unicode NFC (api.md): the bags written before,
one per spelling ("café" with é as one character, and with e and a combining accent), become one.

Each bag whose facets are not in NFC is merged into the bag of its NFC facets (made when there is
none): its deposits move there, keeping everything else they hold (scope as sent included), and
so do its conflict episodes (of two open ones the older stays open), claims, skips, resolutions
and conflict copies; the old row goes. Each merged bag is then recounted (counts, lexemes), its
conflict copies completed, an episode opened if it is in conflict without one (dated when its
second side arrived), and its owner's tally given the change in open conflicts.

A deposit's bag is one of the columns the database keeps immutable, so the trigger that keeps
them is set aside for this one statement per bag, in this migration's transaction.
"""

from collections import defaultdict
from importlib import import_module

from django.db import migrations, models

FACETS = ("model", "dataset", "env", "version", "n", "seed")
IMMUTABLE = "deposits_immutable"


def _moved(connection) -> dict[str, list[tuple[str, str, tuple]]]:
    """Per owner, each bag to merge: (its id, its NFC bag's id, the NFC facets)."""
    from deposits.domain.bags import bag_id, bag_scope
    from deposits.domain.types import Scope

    moves: dict[str, list[tuple[str, str, tuple]]] = defaultdict(list)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id, user_id, {', '.join(FACETS)} FROM deposits_scopebag ORDER BY id")
        for bag, user_id, *facets in cursor.fetchall():
            scope = Scope(**dict(zip(FACETS, facets, strict=True)))
            grouped = bag_scope(scope)
            if grouped is not scope:
                moves[user_id].append((bag, bag_id(user_id, scope), grouped.facets))
    return moves


def _set_aside_immutability(connection) -> None:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # ALTER TABLE waits for no deferred check of this transaction's own writes.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(f"ALTER TABLE deposits_deposit DISABLE TRIGGER {IMMUTABLE}")
            cursor.execute("SET CONSTRAINTS ALL DEFERRED")
        else:
            cursor.execute(f"DROP TRIGGER {IMMUTABLE}")


def _restore_immutability(connection) -> None:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(f"ALTER TABLE deposits_deposit ENABLE TRIGGER {IMMUTABLE}")
            cursor.execute("SET CONSTRAINTS ALL DEFERRED")
        else:
            cursor.execute(import_module("deposits.migrations.0026_erasure_takes_copied_refs").SQLITE)


def _merge(cursor, user_id: str, old: str, target: str, facets: tuple) -> None:
    """Move everything of bag `old` into bag `target` (made from `old`'s row when missing)."""
    columns = ", ".join(FACETS)
    cursor.execute(
        f"""INSERT INTO deposits_scopebag (id, user_id, {columns}, live_positive, live_negative,
            live_cautionary, live_open, kept_positive, kept_negative, kept_cautionary, kept_superseded,
            last_deposit_at, created_at, updated_at)
        SELECT %s, user_id, {", ".join(["%s"] * len(FACETS))}, 0, 0, 0, 0, 0, 0, 0, 0,
            last_deposit_at, created_at, updated_at
        FROM deposits_scopebag WHERE id = %s
        ON CONFLICT (id) DO UPDATE SET
            last_deposit_at = CASE WHEN deposits_scopebag.last_deposit_at IS NULL
                OR deposits_scopebag.last_deposit_at < excluded.last_deposit_at
                THEN excluded.last_deposit_at ELSE deposits_scopebag.last_deposit_at END,
            created_at = CASE WHEN excluded.created_at < deposits_scopebag.created_at
                THEN excluded.created_at ELSE deposits_scopebag.created_at END""",
        [target, *facets, old],
    )
    cursor.execute(
        "UPDATE deposits_deposit SET bag_id = %s WHERE user_id = %s AND bag_id = %s", [target, user_id, old]
    )
    # One open episode per bag: of the two bags' open ones, the older stays.
    cursor.execute(
        "SELECT id FROM deposits_conflictepisode WHERE bag_id IN (%s, %s) AND ended_at IS NULL "
        "ORDER BY started_at, id",
        [old, target],
    )
    later = [row[0] for row in cursor.fetchall()[1:]]
    for episode in later:
        cursor.execute("DELETE FROM deposits_conflictepisode WHERE id = %s", [episode])
    cursor.execute("UPDATE deposits_conflictepisode SET bag_id = %s WHERE bag_id = %s", [target, old])
    # A claim or skip the merged bag has already wins over the old bag's.
    cursor.execute(
        "DELETE FROM deposits_reviewclaim WHERE bag_id = %s "
        "AND EXISTS (SELECT 1 FROM deposits_reviewclaim c WHERE c.bag_id = %s)",
        [old, target],
    )
    cursor.execute("UPDATE deposits_reviewclaim SET bag_id = %s WHERE bag_id = %s", [target, old])
    cursor.execute(
        "DELETE FROM deposits_reviewskip WHERE bag_id = %s AND reviewer IN "
        "(SELECT s.reviewer FROM deposits_reviewskip s WHERE s.bag_id = %s)",
        [old, target],
    )
    cursor.execute("UPDATE deposits_reviewskip SET bag_id = %s WHERE bag_id = %s", [target, old])
    cursor.execute("UPDATE deposits_resolution SET bag_id = %s WHERE bag_id = %s", [target, old])
    cursor.execute("UPDATE deposits_conflictcopy SET bag_id = %s WHERE bag_id = %s", [target, old])
    # The recount writes the merged bag's lexemes whole, chunks included.
    cursor.execute("DELETE FROM deposits_bagterms WHERE bag_id = %s", [old])
    cursor.execute("DELETE FROM deposits_scopebag WHERE id = %s", [old])


def _open_episodes(cursor, bag_ids: set[str]) -> int:
    ids = sorted(bag_ids)
    marks = ", ".join(["%s"] * len(ids))
    cursor.execute(
        f"SELECT count(*) FROM deposits_conflictepisode WHERE ended_at IS NULL AND bag_id IN ({marks})", ids
    )
    return cursor.fetchone()[0]


def regroup(apps, schema_editor):
    from django.utils import timezone

    from deposits.services.bag_counts import bags_recount
    from deposits.services.episodes import episodes_open_existing
    from deposits.services.owners import Tally, tally_write
    from deposits.sql.conflict_copies import COLUMNS as COPY_COLUMNS
    from deposits.sql.conflict_copies import TABLE as COPIES
    from deposits.sql.rules import in_conflict_stored_sql

    connection = schema_editor.connection
    moves = _moved(connection)
    if not moves:
        return
    now = timezone.now()
    _set_aside_immutability(connection)
    before: dict[str, int] = {}
    with connection.cursor() as cursor:
        for user_id, bags in moves.items():
            before[user_id] = _open_episodes(cursor, {b for old, target, _ in bags for b in (old, target)})
            for old, target, facets in bags:
                _merge(cursor, user_id, old, target, facets)
    _restore_immutability(connection)
    targets = {user_id: {target for _, target, _ in bags} for user_id, bags in moves.items()}
    for user_id, bag_ids in targets.items():
        bags_recount(bag_ids, user_id=user_id, now=now)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # The moved deposits of a bag in conflict before and after the merge have no copy yet.
            ids = sorted(bag for bag_ids in targets.values() for bag in bag_ids)
            columns = ", ".join(f"d.{column}" for column in COPY_COLUMNS.split(", "))
            cursor.execute(
                f"INSERT INTO {COPIES} ({COPY_COLUMNS}) SELECT {columns} FROM deposits_deposit d "
                f"JOIN deposits_scopebag b ON b.id = d.bag_id WHERE b.id = ANY(%s) AND {in_conflict_stored_sql('b')} "
                "ON CONFLICT (id) DO NOTHING",
                [ids],
            )
    episodes_open_existing(connection)
    with connection.cursor() as cursor:
        for user_id, bag_ids in targets.items():
            opened = _open_episodes(cursor, bag_ids) - before[user_id]
            tally_write(Tally(user_id, conflicts=opened, activity=now))


class Migration(migrations.Migration):
    dependencies = [("deposits", "0026_erasure_takes_copied_refs")]

    operations = [
        # A text facet in NFC may be up to three times as long as sent (200 characters).
        *(
            migrations.AlterField(
                model_name="scopebag", name=facet, field=models.CharField(max_length=600, null=True)
            )
            for facet in ("model", "dataset", "env", "version")
        ),
        migrations.RunPython(regroup, migrations.RunPython.noop),
    ]

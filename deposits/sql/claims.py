"""The review desk's claims as single statements: each takes a claim in one conditional write.

A claim is one row per bag (`ReviewClaim`, primary key = the bag). Handing out the next conflict
is one `INSERT … SELECT … ON CONFLICT DO UPDATE … WHERE`: the row is written only if nobody holds
the bag, the holder's claim has expired, or the holder is the reviewer asking. Two reviewers
asking at the same instant may pick the same bag; PostgreSQL makes the second insert wait for the
first, then re-checks the WHERE against the committed row, finds it held, and writes nothing, so
the second asks again and gets the next bag. Never a read and then a write.

The same SQL runs on SQLite (3.35 or later: upsert with RETURNING), where writes are serialized.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import connection

from deposits.models import ConflictEpisode, ReviewClaim, ReviewSkip

CLAIM = ReviewClaim._meta.db_table
EPISODE = ConflictEpisode._meta.db_table
SKIP = ReviewSkip._meta.db_table

# The holder's row is overwritten only when free for the asker: expired, or the asker's own.
_FREE = f"{CLAIM}.expires_at <= excluded.claimed_at OR {CLAIM}.reviewer = excluded.reviewer"
# Renewing one's own claim keeps when it was first taken and whom it was taken over from.
_ON_CONFLICT = f"""
ON CONFLICT (bag_id) DO UPDATE SET
    reviewer = excluded.reviewer,
    claimed_at = CASE WHEN {CLAIM}.reviewer = excluded.reviewer AND {CLAIM}.expires_at > excluded.claimed_at
                      THEN {CLAIM}.claimed_at ELSE excluded.claimed_at END,
    expires_at = excluded.expires_at,
    taken_from = CASE WHEN {CLAIM}.reviewer = excluded.reviewer THEN {CLAIM}.taken_from ELSE NULL END
"""

# The next conflict for a reviewer: the one they hold (in the filter) first, the one they took
# last if several (a Take over, a way back to a skip, an Undo), then the oldest nobody holds,
# and the ones they skipped last, in the order they skipped them. Each of the three turns finds
# its first by an index walk that stops there (the oldest free one by `episode_open_started`,
# passing only the conflicts others hold and this reviewer skipped), so handing out the next
# conflict costs the same however many are open; one ORDER BY over every open conflict cost
# 13 ms at 4,484 and 47 ms at 22,299.
NEXT = f"""
INSERT INTO {CLAIM} (bag_id, user_id, reviewer, claimed_at, expires_at, taken_from)
SELECT n.bag_id, n.user_id, %(reviewer)s, %(now)s, %(until)s, NULL
FROM (
    SELECT * FROM (SELECT 0 AS turn, e.bag_id, e.user_id
     FROM {CLAIM} c
     JOIN {EPISODE} e ON e.bag_id = c.bag_id AND e.ended_at IS NULL
     LEFT JOIN {SKIP} s ON s.bag_id = e.bag_id AND s.reviewer = %(reviewer)s
     WHERE c.reviewer = %(reviewer)s AND c.expires_at > %(now)s AND e.user_id LIKE %(prefix)s ESCAPE '\\'
     ORDER BY c.claimed_at DESC, s.id IS NOT NULL, s.skipped_at, e.started_at, e.id
     LIMIT 1) t0
    UNION ALL
    SELECT * FROM (SELECT 1, e.bag_id, e.user_id
     FROM {EPISODE} e
     WHERE e.ended_at IS NULL AND e.user_id LIKE %(prefix)s ESCAPE '\\'
       AND NOT EXISTS (SELECT 1 FROM {CLAIM} c WHERE c.bag_id = e.bag_id AND c.expires_at > %(now)s)
       AND NOT EXISTS (SELECT 1 FROM {SKIP} s WHERE s.bag_id = e.bag_id AND s.reviewer = %(reviewer)s)
     ORDER BY e.started_at, e.id
     LIMIT 1) t1
    UNION ALL
    SELECT * FROM (SELECT 2, e.bag_id, e.user_id
     FROM {SKIP} s
     JOIN {EPISODE} e ON e.bag_id = s.bag_id AND e.ended_at IS NULL
     WHERE s.reviewer = %(reviewer)s AND e.user_id LIKE %(prefix)s ESCAPE '\\'
       AND NOT EXISTS (SELECT 1 FROM {CLAIM} c WHERE c.bag_id = e.bag_id AND c.expires_at > %(now)s)
     ORDER BY s.skipped_at, e.started_at, e.id
     LIMIT 1) t2
) n
WHERE true
ORDER BY n.turn
LIMIT 1
{_ON_CONFLICT}
WHERE {_FREE}
RETURNING user_id, bag_id
"""

# A claim on one named bag, proposed only while it is in conflict (its episode is open).
_CLAIM_ONE_BAG = f"""
INSERT INTO {CLAIM} (bag_id, user_id, reviewer, claimed_at, expires_at, taken_from)
SELECT e.bag_id, e.user_id, %(reviewer)s, %(now)s, %(until)s, NULL
FROM {EPISODE} e
WHERE e.ended_at IS NULL AND e.user_id = %(user_id)s AND e.bag_id = %(bag_id)s"""

# One named bag, if it is in conflict and free for the reviewer (the desk's way back to a skip).
ONE = f"""
{_CLAIM_ONE_BAG}
{_ON_CONFLICT}
WHERE {_FREE}
RETURNING user_id, bag_id
"""

# Take over: the claim passes to the reviewer whoever held it, remembering a live holder.
TAKE_OVER = f"""
{_CLAIM_ONE_BAG}
ON CONFLICT (bag_id) DO UPDATE SET
    reviewer = excluded.reviewer,
    claimed_at = excluded.claimed_at,
    expires_at = excluded.expires_at,
    taken_from = CASE WHEN {CLAIM}.reviewer <> excluded.reviewer AND {CLAIM}.expires_at > excluded.claimed_at
                      THEN {CLAIM}.reviewer ELSE {CLAIM}.taken_from END
RETURNING user_id, bag_id
"""


def like_prefix(prefix: str) -> str:
    """A LIKE pattern matching what starts with `prefix`, its own % and _ taken literally."""
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def claim_one(statement: str, **params: Any) -> tuple[str, str] | None:
    """Run one of the statements above; (user_id, bag_id) of the bag it claimed, or None."""
    for name in ("now", "until"):
        value: datetime = params[name]
        params[name] = connection.ops.adapt_datetimefield_value(value)
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        row = cursor.fetchone()
    return None if row is None else (str(row[0]), str(row[1]))

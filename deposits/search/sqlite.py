"""SQLite full-text search: a contentless FTS5 table over content + scope note.

Triggers on the deposit table keep it, and its rowids put each owner's entries in one range
(migration 0010).
"""

from __future__ import annotations

from django.db import connection

from deposits.search.base import SearchBackend

# The full-text rowid of a deposit: its owner's number × OWNER_BLOCK + the deposit's rowid.
OWNER_BLOCK = 2**36
_OWNER_START = f"(SELECT o.number * {OWNER_BLOCK} FROM deposits_ftsowner o WHERE o.user_id = %s)"


class SqliteBackend(SearchBackend):
    # The full-text table first (CROSS JOIN fixes the order): SQLite would otherwise walk the
    # owner's deposits and ask the index about each one.
    source_sql = (
        f"deposits_fts CROSS JOIN deposits_deposit d ON d.rowid = deposits_fts.rowid & {OWNER_BLOCK - 1}"
    )
    # The owner's rowid range: FTS5 seeks to it, so a shared file costs what the owner's own would.
    match_sql = (
        f"deposits_fts MATCH %s AND deposits_fts.rowid >= {_OWNER_START} "
        f"AND deposits_fts.rowid < {_OWNER_START} + {OWNER_BLOCK}"
    )
    # bm25() is lower-is-better and needs no query argument; negate it to a rank.
    rank_sql = "-bm25(deposits_fts)"
    # A row stamped after `now` (clock skew between writers) counts as brand new, as decay() says.
    age_days_sql = "max(julianday(%s) - julianday(d.created_at), 0)"

    def forget_erased(self) -> None:
        # FTS5 records a deletion as a marker in a new segment and keeps the erased terms in the
        # older ones until they merge; secure-delete needs SQLite 3.42, so the segments
        # are merged now. Erasures are rare, and nothing of an erased claim may stay behind.
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO deposits_fts (deposits_fts) VALUES ('optimize')")

    def text_query(self, words: list[str]) -> str:
        # Each word quoted: FTS5 then reads it as a term, never as an operator (NOT, OR, NEAR).
        return " OR ".join(f'"{word}"' for word in words)

    def match_params(self, query: str, user_id: str) -> list[object]:
        return [query, user_id, user_id]

"""SQLite: an FTS5 table over content + scope note, kept by triggers on the deposit table."""

from __future__ import annotations

from deposits.search.base import SearchBackend


class SqliteBackend(SearchBackend):
    source_sql = "deposits_fts JOIN deposits_deposit d ON d.rowid = deposits_fts.rowid"
    match_sql = "deposits_fts MATCH %s"
    # bm25() is lower-is-better and needs no query argument; negate it to a rank.
    rank_sql = "-bm25(deposits_fts)"
    # A row stamped after `now` (clock skew between writers) counts as brand new, as decay() says.
    age_days_sql = "max(julianday(%s) - julianday(d.created_at), 0)"

    def text_query(self, words: list[str]) -> str:
        # Each word quoted: FTS5 then reads it as a term, never as an operator (NOT, OR, NEAR).
        return " OR ".join(f'"{word}"' for word in words)

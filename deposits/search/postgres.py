"""PostgreSQL: a generated `tsvector` over content + scope note, GIN-indexed with user_id."""

from __future__ import annotations

from deposits.search.base import SearchBackend

TS_CONFIG = "english"


class PostgresBackend(SearchBackend):
    source_sql = "deposits_deposit d"
    match_sql = f"d.search_vector @@ to_tsquery('{TS_CONFIG}', %s)"
    rank_sql = f"ts_rank(d.search_vector, to_tsquery('{TS_CONFIG}', %s))"
    age_days_sql = "extract(epoch FROM (%s - d.created_at)) / 86400.0"

    def rank_params(self, query: str) -> list[object]:
        return [query]

    def text_query(self, words: list[str]) -> str:
        # Words are letters and digits only (query_words), so they cannot carry tsquery syntax.
        return " | ".join(words)

"""Full-text search backends, one per database, behind `search_backend()`."""

from __future__ import annotations

from django.db import connection

from deposits.search.base import Aggregates, SearchBackend, SearchRequest
from deposits.search.postgres import PostgresBackend
from deposits.search.sqlite import SqliteBackend

__all__ = ["Aggregates", "SearchBackend", "SearchRequest", "search_backend"]


def search_backend() -> SearchBackend:
    """The backend for the configured database: PostgreSQL tsvector, or SQLite FTS5."""
    if connection.vendor == "postgresql":
        return PostgresBackend()
    if connection.vendor == "sqlite":
        return SqliteBackend()
    raise NotImplementedError(f"no search backend for {connection.vendor}")

"""Removing the benchmark's owners from a store, table by table in an order the keys allow.

Every table that holds their rows is emptied of them, in an order the foreign keys allow.
"""

from __future__ import annotations

from django.db import connection

# Each table with a user_id column, referencing tables first. The conflict copies go with their
# deposits (a trigger deletes them); the bags' lexeme chunks have none, so they are named.
OWNER_TABLES = (
    "deposits_resolutionkept", "deposits_resolution", "deposits_reviewclaim", "deposits_reviewskip",
    "deposits_contradiction", "deposits_idempotencyentry", "deposits_depositvector",
    "deposits_embeddingpending", "deposits_vectorhead", "deposits_deposit", "deposits_conflictepisode",
    "deposits_bagterms", "deposits_scopebag", "deposits_recalllog", "deposits_ownertally",
)  # fmt: skip


def delete_owners(prefix: str) -> None:
    """Delete every row of the owners whose id starts with `prefix` (inside the caller's transaction)."""
    with connection.cursor() as cursor:
        for table in OWNER_TABLES:
            cursor.execute(f"DELETE FROM {table} WHERE user_id LIKE %s", [prefix + "%"])

"""The deposit store's part in forgetting an owner (diagnostics.forget runs it, in its transaction).

Before the owner's rows go: its idempotency keys become tombstones (deposits.services.tombstones)
and the deployment's counts give up what the owner's tally held. After: SQLite's full-text index
forgets the owner's range and merges its segments, so no erased word stays in them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import connection

from deposits.models import Contradiction, Deposit, OwnerTally
from deposits.search import search_backend
from deposits.services.owners import Tally, tally_write
from deposits.services.tombstones import keys_tombstone_owner


@dataclass(frozen=True, slots=True)
class StoreForgotten:
    deposits: int
    edges: int
    keys_tombstoned: int


def store_forget_begin(*, user_id: str, now: datetime) -> StoreForgotten:
    """Tombstone what the owner holds and take its tally out of the deployment's counts.

    Its keys are filed as tombstones; the rows themselves are the caller's to delete, after this.
    """
    tally = OwnerTally.objects.select_for_update().filter(user_id=user_id).first()
    if tally is not None:
        # The deployment's owner and conflict counts change as they would had every live
        # deposit and open conflict of the owner gone in one write.
        tally_write(Tally(user_id, live=-tally.live_deposits, conflicts=-tally.open_conflicts, activity=now))
    return StoreForgotten(
        deposits=Deposit.objects.filter(user_id=user_id).count(),
        edges=Contradiction.objects.filter(user_id=user_id).count(),
        keys_tombstoned=keys_tombstone_owner(user_id, now),
    )


def store_forget_end(*, user_id: str) -> None:
    """After the owner's deposits are deleted: what the full-text index keeps beside them."""
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM deposits_ftsowner WHERE user_id = %s", [user_id])
    search_backend().forget_erased()

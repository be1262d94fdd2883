"""The deposit keys of a forgotten owner, kept as tombstones under digests (atlaso_site.lib.forgotten).

`keys_tombstone_owner` files them when the owner is forgotten; `forgotten_keys` is how every
write that claims keys finds them, so a replay answers 410 `erased` and writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.conf import settings
from django.db import connection

from atlaso_site.lib.forgotten import forgotten_key, forgotten_owner
from atlaso_site.lib.idempotency import WINDOW
from deposits.models import IdempotencyEntry


def forgotten_keys(user_id: str, keys: Sequence[str], now: datetime) -> set[str]:
    """Those of `keys` that a forgotten owner of this id used within their window."""
    secret = settings.SECRET_KEY
    owner = forgotten_owner(user_id, secret)
    live = IdempotencyEntry.objects.filter(user_id=owner, created_at__gt=now - WINDOW)
    # Most owners were never forgotten: one probe of the index says so, before any key is hashed.
    if not keys or not live.exists():
        return set()
    digests = {forgotten_key(key, secret): key for key in keys}
    return {digests[found] for found in live.filter(key__in=list(digests)).values_list("key", flat=True)}


def keys_tombstone_owner(user_id: str, now: datetime) -> int:
    """File every key the owner used within its window as a tombstone; returns the keys filed.

    Under digests; the owner's own entries go, live ones and erasure tombstones alike.

    Runs inside the forgetting transaction, before the owner's deposits go.
    """
    secret = settings.SECRET_KEY
    owner = forgotten_owner(user_id, secret)
    entries = IdempotencyEntry.objects.filter(user_id=user_id)
    fresh = list(entries.filter(created_at__gt=now - WINDOW).values_list("key", "created_at"))
    tombstones = [
        IdempotencyEntry(
            user_id=owner, key=forgotten_key(key, secret), payload_hash="", deposit=None,
            created_at=created_at, erased_at=now,
        )
        for key, created_at in fresh
    ]  # fmt: skip
    # A tombstone of an earlier forgetting of the same id and key stays as it was.
    IdempotencyEntry.objects.bulk_create(tombstones, batch_size=1000, ignore_conflicts=True)
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {IdempotencyEntry._meta.db_table} WHERE user_id = %s", [user_id])
    return len(tombstones)

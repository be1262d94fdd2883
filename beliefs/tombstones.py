"""The observation keys of a forgotten owner, kept as tombstones under digests.

Under atlaso_site.lib.forgotten's digests, as the deposit store keeps its own
(deposits.services.tombstones).
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import connection

from atlaso_site.lib.forgotten import forgotten_key, forgotten_owner
from atlaso_site.lib.idempotency import WINDOW
from beliefs.models import ObservationKey


def observation_key_forgotten(user_id: str, key: str, now: datetime) -> bool:
    """A forgotten owner of this id used `key` within its window."""
    secret = settings.SECRET_KEY
    return ObservationKey.objects.filter(
        user_id=forgotten_owner(user_id, secret), key=forgotten_key(key, secret), created_at__gt=now - WINDOW
    ).exists()


def observation_keys_tombstone_owner(user_id: str, now: datetime) -> int:
    """File the owner's observation keys within their window as tombstones; returns the keys filed.

    Under digests, with no revision and no payload; the owner's own keys are removed.
    """
    secret = settings.SECRET_KEY
    owner = forgotten_owner(user_id, secret)
    fresh = ObservationKey.objects.filter(user_id=user_id, created_at__gt=now - WINDOW)
    tombstones = [
        ObservationKey(
            user_id=owner,
            key=forgotten_key(key, secret),
            payload_hash="",
            revision=None,
            created_at=created_at,
        )
        for key, created_at in fresh.values_list("key", "created_at")
    ]
    ObservationKey.objects.bulk_create(tombstones, batch_size=1000, ignore_conflicts=True)
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {ObservationKey._meta.db_table} WHERE user_id = %s", [user_id])
    return len(tombstones)

"""Idempotency keys as every write that takes one reads them.

A deposit, a bulk item, a belief observation: how long a key is remembered, how long it may be,
which one was sent, and the fingerprint that tells a replay from a conflict (domain.md,
Idempotency).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from atlaso_site.lib.errors import IDEMPOTENCY_CONFLICT, AtlasoError, invalid

WINDOW = timedelta(hours=24)
MAX_KEY_LENGTH = 200


# json.dumps with these options builds an encoder on every call; one serves every fingerprint.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def payload_fingerprint(payload: Mapping[str, Any]) -> str:
    """A canonical hash of a request's fields: same fields and values give the same hash."""
    canonical = _CANONICAL.encode(payload)
    return hashlib.blake2b(canonical.encode("utf-8"), digest_size=16).hexdigest()


def validate_idempotency_key(key: Any) -> str | None:
    """An idempotency key as sent (header or body), or None when none was sent."""
    if key is None:
        return None
    if not isinstance(key, str) or not 1 <= len(key) <= MAX_KEY_LENGTH:
        raise invalid(
            "idempotency_key",
            f"idempotency_key must be 1..{MAX_KEY_LENGTH} characters; compute one with "
            "idempotency_key(*parts) (see the README)",
        )
    return key


def sent_idempotency_key(body_key: str | None, header_key: str | None) -> str | None:
    """The write's key, from the body or the Idempotency-Key header, checked; the two must agree.

    An empty key is refused (422), never read as "no key".
    """
    if body_key is not None and header_key is not None and body_key != header_key:
        raise invalid(
            "idempotency_key",
            "the Idempotency-Key header and the body's idempotency_key differ; send one of them",
        )
    return validate_idempotency_key(body_key if body_key is not None else header_key)


def idempotency_conflict(key: str, existing_id: object | None) -> AtlasoError:
    """The key was used within its window for another payload: 409, naming what it wrote."""
    return AtlasoError(
        IDEMPOTENCY_CONFLICT,
        "this idempotency_key was already used within 24 hours for a different payload; "
        "use a new key for a new write, or resend the original payload to replay it",
        idempotency_key=key,
        existing_id=None if existing_id is None else str(existing_id),
    )


__all__ = [
    "MAX_KEY_LENGTH",
    "WINDOW",
    "idempotency_conflict",
    "payload_fingerprint",
    "sent_idempotency_key",
    "validate_idempotency_key",
]

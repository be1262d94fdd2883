"""Idempotency keys: the client-side helper and the payload fingerprint."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

KEY_PREFIX = "ak_"
SEPARATOR = "\x1f"
WINDOW = timedelta(hours=24)
MAX_KEY_LENGTH = 200


def idempotency_key(*parts: object) -> str:
    """`"ak_"` + blake2b-16 hex of the parts as UTF-8 text joined by the unit separator."""
    joined = SEPARATOR.join(str(part) for part in parts)
    return KEY_PREFIX + hashlib.blake2b(joined.encode("utf-8"), digest_size=16).hexdigest()


def payload_fingerprint(payload: Mapping[str, Any]) -> str:
    """A canonical hash of a request's fields: same fields and values give the same hash."""
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.blake2b(canonical.encode("utf-8"), digest_size=16).hexdigest()

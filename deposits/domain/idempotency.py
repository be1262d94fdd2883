"""Idempotency keys: the client-side helper.

The window and the payload fingerprint are the kernel's (atlaso_site.lib.idempotency), which the
belief observations use too.
"""

from __future__ import annotations

import hashlib

from atlaso_site.lib.idempotency import MAX_KEY_LENGTH, WINDOW, payload_fingerprint

KEY_PREFIX = "ak_"
SEPARATOR = "\x1f"


def idempotency_key(*parts: object) -> str:
    """`"ak_"` + blake2b-16 hex of the parts as UTF-8 text joined by the unit separator."""
    joined = SEPARATOR.join(str(part) for part in parts)
    return KEY_PREFIX + hashlib.blake2b(joined.encode("utf-8"), digest_size=16).hexdigest()


__all__ = ["KEY_PREFIX", "MAX_KEY_LENGTH", "SEPARATOR", "WINDOW", "idempotency_key", "payload_fingerprint"]

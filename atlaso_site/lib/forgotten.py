"""The idempotency keys of a forgotten owner: tombstones that name neither the owner nor the key.

Forgetting an owner (portability.md) keeps each of its idempotency keys for the rest of its 24
hours, so that a client's retry answers 410 `erased` instead of writing the forgotten memory
back. A tombstone is filed under keyed digests of the owner and of the key: the write that
replays the key computes the same two digests and finds it, while no row holds the owner's id,
and neither can be confirmed by hashing guesses without the deployment's secret.
"""

from __future__ import annotations

import hashlib
import hmac

from atlaso_site.lib.errors import ERASED, AtlasoError

# A user_id starts with a letter or digit (lib.user_ids), so a tombstone's owner is never one.
OWNER_MARK = "~"


def _digest(secret: str, kind: bytes, text: str) -> str:
    return hmac.new(secret.encode("utf-8"), kind + b"\x1f" + text.encode("utf-8"), hashlib.sha256).hexdigest()


def forgotten_owner(user_id: str, secret: str) -> str:
    """The owner a forgotten owner's tombstones are filed under (65 characters)."""
    return OWNER_MARK + _digest(secret, b"owner", user_id)


def forgotten_key(key: str, secret: str) -> str:
    """The key a forgotten owner's key is kept as (64 characters)."""
    return _digest(secret, b"key", key)


def erased(key: str) -> AtlasoError:
    """The refusal of a key whose write was erased or whose owner was forgotten.

    Nothing is written under it again within its 24 hours.
    """
    return AtlasoError(
        ERASED,
        "what this idempotency_key wrote was erased; nothing is written again under this key "
        "within 24 hours of its first use. To record it anew, send it with a new key.",
        idempotency_key=key,
    )

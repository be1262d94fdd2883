"""API key secrets: made at random, stored only as a hash."""

from __future__ import annotations

import hashlib
import secrets

SECRET_PREFIX = "atl_"


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def hash_secret(secret: str) -> str:
    # The secret is 256 random bits, so a fast hash is enough: nothing to brute-force.
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()

"""API-key authentication and the access checks every operation makes."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.http import HttpRequest
from django.utils import timezone
from ninja.security import HttpBearer

from beliefs.domain.values import USER_ID_PATTERN, USER_ID_RULE
from beliefs.errors import ApiError
from beliefs.models import ApiKey

SECRET_PREFIX = "atl_"


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def hash_secret(secret: str) -> str:
    # The secret is 256 random bits, so a fast hash is enough: nothing to brute-force.
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class ApiKeyAuth(HttpBearer):
    """`Authorization: Bearer <key>`; a missing, unknown or revoked key answers 401."""

    def authenticate(self, request: HttpRequest, token: str) -> ApiKey | None:
        if not token or len(token) > 200:
            return None
        key = ApiKey.objects.select_related("channel__tier").filter(secret_hash=hash_secret(token)).first()
        if key is None or key.is_revoked:
            return None
        now = timezone.now()
        stale = timedelta(seconds=settings.API_KEY_LAST_USED_RESOLUTION_SECONDS)
        if key.last_used_at is None or now - key.last_used_at > stale:
            ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
            key.last_used_at = now
        return key


def require(request: HttpRequest, permission: str, user_id: str | None = None) -> ApiKey:
    """The request's key, if it has `permission` and may see `user_id`; else 403.

    A prefix mismatch answers 403 whether or not the owner exists, so a confined key
    never learns which owners live outside its prefix.
    """
    key: ApiKey = request.auth  # type: ignore[attr-defined]
    if not key.has_permission(permission):
        raise ApiError("forbidden", f"this API key lacks the {permission!r} permission")
    if user_id is not None and not USER_ID_PATTERN.fullmatch(user_id):
        raise ApiError("validation_error", USER_ID_RULE, field="user_id")
    if user_id is not None and not key.may_access(user_id):
        raise ApiError("forbidden", f"this API key is confined to user_ids starting {key.user_prefix!r}")
    return key

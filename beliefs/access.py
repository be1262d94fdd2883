"""API-key authentication and the access checks every operation makes."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.http import HttpRequest
from django.utils import timezone
from ninja.security import HttpBearer

from atlaso_site.lib.errors import FORBIDDEN, AtlasoError
from atlaso_site.lib.secrets import hash_secret
from atlaso_site.lib.users import validate_user_id
from beliefs.models import ApiKey


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
        raise AtlasoError(FORBIDDEN, f"this API key lacks the {permission!r} permission")
    if user_id is not None:
        validate_user_id(user_id)
        if not key.may_access(user_id):
            raise AtlasoError(FORBIDDEN, f"this API key is confined to user_ids starting {key.user_prefix!r}")
    return key


def require_global_admin(request: HttpRequest) -> ApiKey:
    """The request's key, if it holds `admin` and is confined to no prefix; else 403.

    Deployment-wide reads and global changes span every owner, so a key confined to some
    owners may not make them.
    """
    key = require(request, "admin")
    if key.user_prefix:
        raise AtlasoError(
            FORBIDDEN,
            f"this API key is confined to user_ids starting {key.user_prefix!r}; deployment-wide "
            "operations need an admin key confined to no prefix",
        )
    return key

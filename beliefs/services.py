"""Writes for provenance: channels and API keys."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction
from django.utils import timezone

from beliefs.access import hash_secret, new_secret
from beliefs.models import DEFAULT_CHANNEL_TIER, PERMISSIONS, ApiKey, Channel, ProvenanceTier

DEFAULT_PERMISSIONS = ("read", "write")


class ProvenanceError(ValueError):
    """An operator asked for something the provenance rules forbid."""


def channel_get_or_create(*, name: str, tier_name: str | None = None) -> Channel:
    """The channel called `name`; created on `tier_name` (default untrusted) when new.

    Naming a tier for an existing channel bound to another tier is an error: rebinding
    changes the trust of everything the channel wrote, so it is a separate, deliberate act.
    """
    channel = Channel.objects.select_related("tier").filter(name=name).first()
    if channel is not None:
        if tier_name is not None and channel.tier.name != tier_name:
            raise ProvenanceError(
                f"channel {name!r} is bound to tier {channel.tier.name!r}, not {tier_name!r}; "
                "rebind it in the dashboard or admin, or leave the tier out"
            )
        return channel
    tier = ProvenanceTier.objects.filter(name=tier_name or DEFAULT_CHANNEL_TIER).first()
    if tier is None:
        known = ", ".join(ProvenanceTier.objects.values_list("name", flat=True))
        raise ProvenanceError(f"there is no tier {tier_name!r}; the tiers are: {known}")
    channel, _ = Channel.objects.get_or_create(name=name, defaults={"tier": tier})
    return channel


@transaction.atomic
def api_key_create(
    *,
    name: str,
    channel_name: str,
    tier_name: str | None = None,
    permissions: Iterable[str] = (),
    user_prefix: str = "",
) -> tuple[ApiKey, str]:
    """Create a key and return it with its secret, which is never stored and never shown again."""
    chosen = tuple(dict.fromkeys(permissions)) or DEFAULT_PERMISSIONS
    unknown = [p for p in chosen if p not in PERMISSIONS]
    if unknown:
        raise ProvenanceError(
            f"unknown permission {unknown[0]!r}; the permissions are {', '.join(PERMISSIONS)}"
        )
    if not name.strip():
        raise ProvenanceError("an API key needs a name, so people can tell keys apart")
    channel = channel_get_or_create(name=channel_name, tier_name=tier_name)
    secret = new_secret()
    key = ApiKey.objects.create(
        name=name.strip(),
        channel=channel,
        secret_hash=hash_secret(secret),
        display_prefix=secret[:12],
        permissions=list(chosen),
        user_prefix=user_prefix,
    )
    return key, secret


def api_key_revoke(*, key: ApiKey) -> ApiKey:
    """Revoke a key from now on; revoking twice keeps the first time."""
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=key.revoked_at)
    return key

"""Who is writing and how far their word is trusted: provenance tiers, channels and API keys.

Their tables keep the names they were created with in `beliefs` (`db_table`), so moving the
models here moved no row. The writes that change them (and record each change in the
provenance history) are `beliefs.services`; the API's key check is `api_keys`.
"""

from __future__ import annotations

from django.db import models

PERMISSIONS = ("read", "write", "erase", "admin")

DEFAULT_CHANNEL_TIER = "untrusted"


class ProvenanceTier(models.Model):
    """How far a channel's word can be trusted: the ceiling κ on its reliability."""

    name = models.SlugField(max_length=64, unique=True)
    ceiling = models.FloatField()
    description = models.CharField(max_length=500, blank=True)

    class Meta:
        db_table = "beliefs_provenancetier"
        ordering = ["-ceiling", "name"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(ceiling__gt=0) & models.Q(ceiling__lt=1),
                name="tier_ceiling_strictly_between_0_and_1",
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.ceiling})"


class Channel(models.Model):
    """A named source of writes, bound to exactly one tier."""

    name = models.SlugField(max_length=64, unique=True)
    tier = models.ForeignKey(ProvenanceTier, on_delete=models.PROTECT, related_name="channels")
    description = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "beliefs_channel"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ApiKey(models.Model):
    """A client credential: only the secret's hash is kept; the secret is shown once."""

    name = models.CharField(max_length=200)
    channel = models.ForeignKey(Channel, on_delete=models.PROTECT, related_name="api_keys")
    secret_hash = models.CharField(max_length=64, unique=True)
    # The first characters of the secret, so people can tell keys apart without the secret.
    display_prefix = models.CharField(max_length=16)
    permissions = models.JSONField(default=list)
    user_prefix = models.CharField(max_length=128, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "beliefs_apikey"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.display_prefix}…)"

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None

    def has_permission(self, permission: str) -> bool:
        return permission in self.permissions

    def may_access(self, user_id: str) -> bool:
        return user_id.startswith(self.user_prefix)

"""Provenance (tiers, channels, API keys) and, later, the belief revision log."""

from __future__ import annotations

from django.db import models

PERMISSIONS = ("read", "write", "erase", "admin")
HUMAN_REVIEW_CHANNEL = "human_review"

# The eight default tiers of beliefs.md, seeded by migration; operators may edit ceilings.
DEFAULT_TIERS: dict[str, tuple[float, str]] = {
    "user_edit": (0.99, "The owner edited the fact themselves"),
    "user_direct": (0.98, "The owner said it directly"),
    "agent_own": (0.80, "This agent's own reasoning or observation"),
    "tool_output": (0.65, "Output of a tool the agent ran"),
    "document": (0.55, "A document the owner supplied"),
    "agent_third_party": (0.40, "Another agent relayed it"),
    "web_fetch": (0.30, "Fetched from the web"),
    "untrusted": (0.10, "Anything else; a new channel's default"),
}
DEFAULT_CHANNEL_TIER = "untrusted"


class ProvenanceTier(models.Model):
    """How far a channel's word can be trusted: the ceiling κ on its reliability."""

    name = models.SlugField(max_length=64, unique=True)
    ceiling = models.FloatField()
    description = models.CharField(max_length=500, blank=True)

    class Meta:
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

"""The belief revision log, the derived belief state, and the history of provenance changes."""

from __future__ import annotations

from django.db import models

# The channel people write on from the dashboard (resolutions, confirmed beliefs), seeded with
# the default tiers by migration 0002; its model is atlaso_site.access's Channel.
HUMAN_REVIEW_CHANNEL = "human_review"


class BeliefRevision(models.Model):
    """One observation of a belief, effective or not: append-only, the database refuses updates.

    The id is the arrival sequence. The facts (r, L, prior, posterior…) are those computed when
    the observation arrived; the state is always the replay of the log with today's tiers.
    """

    user_id = models.CharField(max_length=128)
    belief_key = models.CharField(max_length=128)
    value = models.CharField(max_length=500)
    observed_at = models.DateTimeField()
    arrived_at = models.DateTimeField()
    channel = models.CharField(max_length=64)
    tier = models.CharField(max_length=64)
    ceiling = models.FloatField()
    taint_tier = models.CharField(max_length=64, null=True)
    content_confidence = models.FloatField(null=True)
    reliability = models.FloatField()
    likelihood_ratio = models.FloatField()
    floor = models.FloatField()
    lifted = models.BooleanField()
    effective = models.BooleanField()
    prior = models.FloatField()
    posterior = models.FloatField()
    shift = models.FloatField()
    # The deposit this came from, as a plain value: beliefs know nothing of deposits.
    deposit_id = models.UUIDField(null=True)
    source_id = models.CharField(max_length=200, null=True)

    class Meta:
        indexes = [
            models.Index(
                fields=["user_id", "belief_key", "observed_at", "id"], name="revision_user_key_claim"
            ),
            models.Index(fields=["user_id", "deposit_id"], name="revision_user_deposit"),
            models.Index(fields=["channel", "user_id", "belief_key"], name="revision_channel_key"),
        ]


class ObservationKey(models.Model):
    """An observation's idempotency key at its first use.

    A retry within 24 hours replays `revision`; entries past the window are ignored by every
    read, then deleted.
    """

    user_id = models.CharField(max_length=128)
    key = models.CharField(max_length=200)
    payload_hash = models.CharField(max_length=64)
    # Null only inside the transaction that claims the key, until its revision is written.
    revision = models.ForeignKey(BeliefRevision, on_delete=models.CASCADE, null=True, related_name="+")
    created_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user_id", "key"], name="observation_key_user_key")]
        indexes = [models.Index(fields=["created_at"], name="observation_key_created")]


class WithdrawnDeposit(models.Model):
    """A soft-retracted deposit: its observations leave every replay, while the log stays intact."""

    user_id = models.CharField(max_length=128)
    deposit_id = models.UUIDField()
    withdrawn_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user_id", "deposit_id"], name="withdrawn_user_deposit")
        ]


class Belief(models.Model):
    """The derived state of one belief key, stored for fast reads; always the log's replay."""

    user_id = models.CharField(max_length=128)
    key = models.CharField(max_length=128)
    state = models.JSONField()
    fact = models.CharField(max_length=500, null=True)
    probability = models.FloatField(default=0.0)
    is_uncertain = models.BooleanField(default=True)
    observation_count = models.IntegerField(default=0)
    last_observed_at = models.DateTimeField(null=True)
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user_id", "key"], name="belief_user_key")]
        indexes = [models.Index(fields=["user_id", "is_uncertain", "key"], name="belief_user_uncertain")]


class CalibrationOutcome(models.Model):
    """A reviewer confirmed a value: what the belief said just before, to score its probabilities."""

    user_id = models.CharField(max_length=128)
    belief_key = models.CharField(max_length=128)
    confirmed_value = models.CharField(max_length=500)
    top_value = models.CharField(max_length=500, null=True)
    top_probability = models.FloatField()
    correct = models.BooleanField()
    # Tier of the latest effective observation of the top value: whose word the number rested on.
    tier = models.CharField(max_length=64, null=True)
    verdict_before = models.JSONField()
    # The reviewer's login (null for an outcome recorded before reviewers were named).
    confirmed_by = models.CharField(max_length=150, null=True)
    created_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["user_id", "created_at"], name="outcome_user_created")]


class ProvenanceChange(models.Model):
    """One change to a tier, a channel or an API key: who made it, when, and what it did.

    Written by the provenance services in the change's own transaction; append-only (the
    database refuses an update). `rebuild_run_id` is the job run that replays the beliefs the
    change touched, kept as a plain value so pruning old runs never rewrites this history.
    """

    class Action(models.TextChoices):
        TIER_CHANGE = "tier_change", "tier changed"
        CHANNEL_CREATE = "channel_create", "channel created"
        CHANNEL_CHANGE = "channel_change", "channel changed"
        API_KEY_CREATE = "api_key_create", "API key created"
        API_KEY_REVOKE = "api_key_revoke", "API key revoked"

    at = models.DateTimeField()
    # A dashboard or admin username, "api key <name>", "command", or "system".
    actor = models.CharField(max_length=200)
    action = models.CharField(max_length=32, choices=Action.choices)
    # The tier's, channel's or key's name.
    subject = models.CharField(max_length=200)
    detail = models.CharField(max_length=500, blank=True)
    rebuild_run_id = models.UUIDField(null=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [
            models.Index(fields=["-at", "-id"], name="provenance_change_at"),
            models.Index(fields=["action", "subject", "-at"], name="provenance_change_subject"),
        ]

    def __str__(self) -> str:
        return f"{self.get_action_display()} {self.subject} by {self.actor}"

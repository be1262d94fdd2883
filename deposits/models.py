"""The store: deposits, contradiction edges, scope bags, idempotency entries, recall log.

Every table leads its indexes with user_id, so the store can be sharded by owner.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.db import models
from django.db.models import Case, Exists, FloatField, IntegerField, OuterRef, Q, Value, When
from django.db.models.functions import Cast, Greatest
from django.db.models.lookups import GreaterThan
from django.utils import timezone

from deposits.domain.bags import CONFLICT_MIN_KINDS, THIN_MAX_DIRECTIONAL
from deposits.domain.types import DIRECTIONAL, POLARITIES


def _present(column: str) -> Case:
    """1 when the count column is above zero, else 0."""
    return Case(When(**{f"{column}__gt": 0}, then=Value(1)), default=Value(0), output_field=IntegerField())


def _sum(expressions: list) -> object:
    total = expressions[0]
    for expression in expressions[1:]:
        total = total + expression
    return total


# The bag rules of deposits.domain.bags as ORM conditions on ScopeBag's kept columns: the
# querysets below filter by them, and aggregates count with them (Count(..., filter=IN_CONFLICT)).
IN_CONFLICT = Q(directional_kinds__gte=CONFLICT_MIN_KINDS)
NOT_IN_CONFLICT = Q(directional_kinds__lt=CONFLICT_MIN_KINDS)
NOT_THIN = Q(directional__gt=THIN_MAX_DIRECTIONAL)
# Split: the non-retracted deposits, superseded ones included, hold two directional polarities.
SPLIT = Q(kept_kinds__gte=CONFLICT_MIN_KINDS)
# Split once and corrected at least once (the Resolution pillar); resolved: that, and settled.
CORRECTED = SPLIT & Q(kept_superseded__gt=0)
RESOLVED = CORRECTED & NOT_IN_CONFLICT


class ScopeBagQuerySet(models.QuerySet["ScopeBag"]):
    """The bag rules of deposits.domain.bags as ORM filters.

    Over the columns the database keeps from the live counts (ScopeBag's generated fields).
    """

    def holding_live(self) -> ScopeBagQuerySet:
        """Bags with at least one live deposit."""
        condition = Q()
        for polarity in POLARITIES:
            condition |= Q(**{f"live_{polarity}__gt": 0})
        return self.filter(condition)

    def in_conflict(self) -> ScopeBagQuerySet:
        return self.filter(IN_CONFLICT)

    def not_in_conflict(self) -> ScopeBagQuerySet:
        return self.filter(NOT_IN_CONFLICT)

    def confident(self) -> ScopeBagQuerySet:
        return self.filter(NOT_IN_CONFLICT & NOT_THIN)

    def resolved(self) -> ScopeBagQuerySet:
        return self.filter(RESOLVED)


class DepositQuerySet(models.QuerySet["Deposit"]):
    """Which deposits count: the `live` rule of deposits.domain.bags as ORM filters."""

    def not_retracted(self) -> DepositQuerySet:
        return self.filter(retracted_at__isnull=True)

    def superseded(self) -> DepositQuerySet:
        return self.filter(is_superseded())

    def live(self) -> DepositQuerySet:
        """Neither soft-retracted nor superseded."""
        return self.not_retracted().exclude(is_superseded())

    def directional(self) -> DepositQuerySet:
        return self.filter(polarity__in=DIRECTIONAL)


class ScopeBag(models.Model):
    """One owner's deposits with equal six facets, with live counts kept by every write."""

    id = models.CharField(max_length=40, primary_key=True)
    user_id = models.CharField(max_length=128)
    # The text facets in NFC (deposits.domain.bags.compared): a facet sent as 200 characters may
    # take up to three times as many so (Unicode bounds NFC's growth at 3×).
    model = models.CharField(max_length=600, null=True)
    dataset = models.CharField(max_length=600, null=True)
    env = models.CharField(max_length=600, null=True)
    version = models.CharField(max_length=600, null=True)
    n = models.BigIntegerField(null=True)
    seed = models.BigIntegerField(null=True)
    # Live = neither soft-retracted nor superseded.
    live_positive = models.IntegerField(default=0)
    live_negative = models.IntegerField(default=0)
    live_cautionary = models.IntegerField(default=0)
    live_open = models.IntegerField(default=0)
    # Newest live deposit per directional polarity: breaks ties for the dominant polarity.
    newest_positive_at = models.DateTimeField(null=True)
    newest_negative_at = models.DateTimeField(null=True)
    newest_cautionary_at = models.DateTimeField(null=True)
    # Non-retracted deposits, superseded ones included: what the Resolution pillar reads.
    kept_positive = models.IntegerField(default=0)
    kept_negative = models.IntegerField(default=0)
    kept_cautionary = models.IntegerField(default=0)
    kept_superseded = models.IntegerField(default=0)
    last_deposit_at = models.DateTimeField(null=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    # The bag rules' inputs, kept by the database from the counts above on every write (stored
    # generated columns), so reading every bag (the deployment's health, the owners list) reads
    # them instead of working them out row by row. deposits.domain.bags has the rules.
    directional = models.GeneratedField(
        expression=_sum([models.F(f"live_{p}") for p in DIRECTIONAL]),
        output_field=IntegerField(),
        db_persist=True,
    )
    directional_kinds = models.GeneratedField(
        expression=_sum([_present(f"live_{p}") for p in DIRECTIONAL]),
        output_field=IntegerField(),
        db_persist=True,
    )
    kept_kinds = models.GeneratedField(
        expression=_sum([_present(f"kept_{p}") for p in DIRECTIONAL]),
        output_field=IntegerField(),
        db_persist=True,
    )
    # The dominant polarity's share of the live directional deposits (Precision's input), null
    # for a bag without one.
    agreement = models.GeneratedField(
        expression=Case(
            When(
                GreaterThan(_sum([models.F(f"live_{p}") for p in DIRECTIONAL]), 0),
                then=Cast(Greatest(*(f"live_{p}" for p in DIRECTIONAL)), FloatField())
                / Cast(_sum([models.F(f"live_{p}") for p in DIRECTIONAL]), FloatField()),
            ),
            default=None,
            output_field=FloatField(),
        ),
        output_field=FloatField(),
        db_persist=True,
    )

    objects = ScopeBagQuerySet.as_manager()

    class Meta:
        indexes = [
            models.Index(fields=["user_id", "updated_at"], name="bag_user_updated"),
            models.Index(fields=["user_id", "last_deposit_at"], name="bag_user_last_deposit"),
        ]

    def __str__(self) -> str:
        return self.id


class Deposit(models.Model):
    """An immutable claim; the database refuses any update but the soft-retract marker."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user_id = models.CharField(max_length=128)
    bag = models.ForeignKey(ScopeBag, on_delete=models.PROTECT, related_name="deposits", db_index=False)
    content = models.TextField()
    polarity = models.CharField(max_length=16)
    evidence_grade = models.CharField(max_length=16)
    scope_model = models.CharField(max_length=200, null=True)
    scope_dataset = models.CharField(max_length=200, null=True)
    scope_env = models.CharField(max_length=200, null=True)
    scope_version = models.CharField(max_length=200, null=True)
    scope_n = models.BigIntegerField(null=True)
    scope_seed = models.BigIntegerField(null=True)
    scope_note = models.TextField(null=True)
    tags = models.JSONField(default=list)
    artifact_refs = models.JSONField(default=list)
    author = models.CharField(max_length=200, null=True)
    author_role = models.CharField(max_length=200, null=True)
    task_id = models.CharField(max_length=200, null=True)
    channel = models.CharField(max_length=64, null=True)
    repro_status = models.CharField(max_length=16, default="unreplicated")
    belief_key = models.CharField(max_length=128, null=True)
    belief_value = models.CharField(max_length=500, null=True)
    created_at = models.DateTimeField()
    # The soft-retract marker: the one change the database lets through after insert.
    retracted_at = models.DateTimeField(null=True)
    retracted_reason = models.TextField(null=True)

    objects = DepositQuerySet.as_manager()

    class Meta:
        indexes = [
            models.Index(fields=["user_id", "created_at"], name="deposit_user_created"),
            models.Index(fields=["user_id", "bag", "polarity", "created_at"], name="deposit_user_bag"),
            # What the database asks of each bag row deleted (forgetting an owner): whether a
            # deposit still names it. Without it, each is a scan of every deposit.
            models.Index(fields=["bag"], name="deposit_bag"),
        ]

    def __str__(self) -> str:
        return str(self.id)


class ConflictCopy(models.Model):
    """A deposit whose bag is in conflict, copied with what recall reads (deposits.sql.conflict_copies).

    PostgreSQL's triggers keep these rows, with a text index column of their own (deposits/0023),
    in step with every write; nothing else writes them, and SQLite's recall never reads them.
    """

    id = models.UUIDField(primary_key=True)  # the deposit's
    user_id = models.CharField(max_length=128)
    bag_id = models.CharField(max_length=40)
    polarity = models.CharField(max_length=16)
    created_at = models.DateTimeField()
    retracted_at = models.DateTimeField(null=True)

    class Meta:
        indexes = [
            models.Index(fields=["user_id", "bag_id"], name="conflict_copy_user_bag"),
            models.Index(fields=["user_id", "polarity", "created_at"], name="conflict_copy_user_created"),
        ]


class BagTerms(models.Model):
    """Lexemes of a bag's live deposits kept beside its row, at most 512 a row (deposits.sql.bag_terms).

    PostgreSQL's trigger writes these rows, with a text index column of their own (deposits/0024),
    when a write would take a bag row's lexemes past the bound; a recount writes them again. SQLite
    keeps no lexemes and never reads them.
    """

    user_id = models.CharField(max_length=128)
    bag_id = models.CharField(max_length=40)


class ContradictionQuerySet(models.QuerySet["Contradiction"]):
    def superseding(self) -> ContradictionQuerySet:
        """The edges that supersede: their source (the correction) is not soft-retracted."""
        return self.filter(superseding=True)


class Contradiction(models.Model):
    """A supersession edge: the newer deposit contradicts (supersedes) the older one.

    Edges are kept for audit. Soft-retracting the newer deposit clears `superseding` in the
    same transaction (domain.md, Live: a retracted correction no longer supersedes), so the
    older deposit is live again unless another superseding edge still points at it.
    """

    user_id = models.CharField(max_length=128)
    new_deposit = models.ForeignKey(Deposit, on_delete=models.CASCADE, related_name="edges_out")
    old_deposit = models.ForeignKey(Deposit, on_delete=models.CASCADE, related_name="edges_in")
    reason = models.TextField(blank=True, default="")
    created_at = models.DateTimeField()
    superseding = models.BooleanField(default=True, db_default=True)

    objects = ContradictionQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["new_deposit", "old_deposit"], name="edge_unique_pair")
        ]
        indexes = [
            models.Index(
                fields=["user_id", "old_deposit"],
                condition=models.Q(superseding=True),
                name="edge_user_old_superseding",
            ),
            models.Index(fields=["user_id", "new_deposit"], name="edge_user_new"),
        ]


def is_superseded() -> Exists:
    """The ORM form of "superseded": a superseding edge points at the deposit (OuterRef pk)."""
    return Exists(Contradiction.objects.superseding().filter(old_deposit=OuterRef("pk")))


def keep_as_erased(collector: Any, field: models.Field, sub_objs: Any, using: str) -> None:
    """on_delete of an idempotency entry's deposit: the entry stays as the key's tombstone.

    Whichever way a deposit is deleted (erasure is the only way), its keys stay remembered as
    erased for the rest of their 24 hours (domain.md, Writing), keeping nothing of the payload:
    the fingerprint goes (a hash of a short claim can be confirmed by guessing it), and so does
    the deposit. The erasure time and the hash are set before the deposit is cleared, as the
    updates run in this order against entries found by their deposit.
    """
    entry = field.model._meta
    collector.add_field_update(entry.get_field("erased_at"), timezone.now(), sub_objs)
    collector.add_field_update(entry.get_field("payload_hash"), "", sub_objs)
    collector.add_field_update(field, None, sub_objs)


# The entries are read lazily by their deposit (as SET_NULL's are), so the updates above find them.
keep_as_erased.lazy_sub_objs = True  # type: ignore[attr-defined]


class IdempotencyEntry(models.Model):
    """A key's first use within its 24-hour window; entries past it are ignored, then deleted.

    An entry whose deposit was erased is a tombstone (`erased_at` set, no deposit, no payload
    hash): any use of its key within the window answers 410 `erased` and writes nothing.
    """

    user_id = models.CharField(max_length=128)
    key = models.CharField(max_length=200)
    # The payload's fingerprint; "" on a tombstone, which keeps nothing of the erased payload.
    payload_hash = models.CharField(max_length=64)
    deposit = models.ForeignKey(Deposit, on_delete=keep_as_erased, null=True, related_name="+")
    created_at = models.DateTimeField()
    erased_at = models.DateTimeField(null=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user_id", "key"], name="idempotency_user_key")]
        indexes = [models.Index(fields=["created_at"], name="idempotency_created")]

    @property
    def is_erased(self) -> bool:
        return self.erased_at is not None


class RecallLog(models.Model):
    """One row per recall: what the Coverage pillar of the FMI reads."""

    user_id = models.CharField(max_length=128)
    created_at = models.DateTimeField()
    hit_count = models.IntegerField()
    returned_confident = models.BooleanField()

    class Meta:
        indexes = [
            models.Index(fields=["user_id", "created_at"], name="recall_user_created"),
            # The diagnostics job asks which owners recalled since its last run, across owners.
            models.Index(fields=["created_at"], name="recall_created"),
        ]


class ConflictEpisode(models.Model):
    """One stretch of time a bag spent in conflict: opened and closed by the writes that cause it."""

    SUPERSESSION, RETRACTION, ERASURE = "supersession", "retraction", "erasure"

    user_id = models.CharField(max_length=128)
    bag = models.ForeignKey(ScopeBag, on_delete=models.PROTECT, related_name="episodes", db_index=False)
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True)
    ended_by = models.CharField(max_length=16, null=True)
    # The deposit whose write ended it, as a plain value: an erased deposit is gone.
    ended_by_deposit_id = models.UUIDField(null=True)
    # When the wait this episode carries on began, if it carries one on: an episode opened by
    # taking back the correction that had ended the bag's last one (an Undo, a retraction) is the
    # same unsettled conflict, still waiting since then. `started_at` keeps the reopening's date.
    waiting_since = models.DateTimeField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["bag"], condition=models.Q(ended_at__isnull=True), name="episode_one_open_per_bag"
            )
        ]
        indexes = [
            models.Index(fields=["user_id", "ended_at"], name="episode_user_ended"),
            models.Index(fields=["bag"], name="episode_bag"),
            models.Index(fields=["ended_at", "started_at"], name="episode_ended_started"),
            # The open conflicts oldest first, as the queue lists them and the desk hands them out.
            models.Index(
                fields=["started_at", "id"],
                condition=models.Q(ended_at__isnull=True),
                name="episode_open_started",
            ),
            # The oldest wait among the open conflicts that carry one on (the desk's "oldest waiting").
            models.Index(
                fields=["waiting_since"],
                condition=models.Q(ended_at__isnull=True, waiting_since__isnull=False),
                name="episode_open_waiting",
            ),
        ]

    @property
    def waiting_from(self) -> datetime:
        """Since when its conflict has waited for a settled answer."""
        return self.waiting_since or self.started_at

    @property
    def is_open(self) -> bool:
        return self.ended_at is None


class OwnerTally(models.Model):
    """One memory owner's live deposits, open conflicts and last write, kept by every write.

    In the write's own transaction (deposits.services.owners), so the owners list pages by index
    instead of counting every bag of the deployment. Written last in each write, after the bag rows.
    """

    user_id = models.CharField(max_length=128, primary_key=True)
    live_deposits = models.IntegerField(default=0)
    open_conflicts = models.IntegerField(default=0)
    last_activity = models.DateTimeField()

    class Meta:
        # The owners list shows owners holding live deposits, by one of these high or recent first
        # (the default, and each column's first click), ties by owner: a page is the index's next
        # rows. The other direction reads the index backwards, each run of ties sorted again.
        indexes = [
            models.Index(fields=[f"-{field}", "user_id"], condition=models.Q(live_deposits__gt=0), name=name)
            for field, name in (
                ("last_activity", "owner_recent"),
                ("live_deposits", "owner_largest"),
                ("open_conflicts", "owner_most_conflicts"),
            )
        ]


class DeploymentTally(models.Model):
    """How many owners hold live deposits and how many conflicts are open, in one row.

    Changed only by a write that gives an owner its first live deposit or takes its last, or opens
    or ends a conflict (`deposits.services.owners.tally_write`), so the owners list, the queue, the
    desk and the overview read their totals from one row, not by counting the deployment.
    """

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    owners = models.IntegerField(default=0)
    open_conflicts = models.IntegerField(default=0)


# ---- The review desk: who is on a conflict, what each reviewer skipped, what was resolved ----


class ReviewClaim(models.Model):
    """A reviewer's hold on a bag in conflict, expiring by itself at `expires_at`.

    One row per bag: taking a claim is one conditional write on it (deposits.sql.claims), so two
    reviewers can never hold one bag. An expired row is as good as none and is overwritten.
    """

    bag = models.OneToOneField(ScopeBag, primary_key=True, on_delete=models.CASCADE, related_name="claim")
    user_id = models.CharField(max_length=128)
    reviewer = models.CharField(max_length=150)
    claimed_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    # Who held it before a Take over, until their next page tells them; then cleared.
    taken_from = models.CharField(max_length=150, null=True)

    class Meta:
        indexes = [
            models.Index(fields=["reviewer", "expires_at"], name="claim_reviewer_expires"),
            models.Index(
                fields=["taken_from"], condition=models.Q(taken_from__isnull=False), name="claim_taken_from"
            ),
        ]


class ReviewSkip(models.Model):
    """A bag a reviewer skipped on the desk: handed to them again only after every other conflict."""

    reviewer = models.CharField(max_length=150)
    bag = models.ForeignKey(ScopeBag, on_delete=models.CASCADE, related_name="+", db_index=False)
    user_id = models.CharField(max_length=128)
    note = models.TextField(blank=True, default="")
    skipped_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["reviewer", "bag"], name="skip_reviewer_bag")]
        indexes = [models.Index(fields=["bag"], name="skip_bag")]


class Resolution(models.Model):
    """A reviewer's Resolve: its resolution deposit, the side that held, and who undid it.

    The resolution deposit's content is the claim that holds; its edges carry the reason. Erasing
    the deposit erases this record too: nothing of erased content stays.
    """

    deposit = models.OneToOneField(
        Deposit, primary_key=True, on_delete=models.CASCADE, related_name="resolution"
    )
    user_id = models.CharField(max_length=128)
    bag = models.ForeignKey(ScopeBag, on_delete=models.CASCADE, related_name="+", db_index=False)
    reviewer = models.CharField(max_length=150)
    side = models.CharField(max_length=16)
    kept = models.IntegerField()
    superseded = models.IntegerField()
    created_at = models.DateTimeField()
    undone_by = models.CharField(max_length=150, null=True)
    undone_at = models.DateTimeField(null=True)

    class Meta:
        indexes = [
            models.Index(fields=["created_at"], name="resolution_created"),
            models.Index(fields=["reviewer", "created_at"], name="resolution_reviewer_created"),
            models.Index(fields=["user_id", "bag", "created_at"], name="resolution_user_bag"),
            models.Index(fields=["bag"], name="resolution_bag"),
        ]


class ImportedRow(models.Model):
    """What an import wrote for a row it could not file under the row's own id.

    A deposit whose id another owner holds, and every observation (portability.md). The import finds
    here what it wrote before, so a line run again is a duplicate and a later line's reference (an
    edge's end, an observation's deposit) reaches the row it names.
    """

    DEPOSIT, OBSERVATION = "deposit", "observation"

    user_id = models.CharField(max_length=128)
    kind = models.CharField(max_length=16)
    # The source's id: a deposit's UUID, or an observation's digest (deposits.services.portability).
    source = models.CharField(max_length=64)
    # What the import wrote for it: the new deposit's UUID, or the revision's id.
    target = models.CharField(max_length=64)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user_id", "kind", "source"], name="imported_row_source")
        ]


class ResolutionKept(models.Model):
    """A deposit a resolution kept, whose artifact refs the resolution deposit copied.

    Erasing it takes from the resolution deposit the refs that no other kept deposit gave.
    """

    resolution = models.ForeignKey(Resolution, on_delete=models.CASCADE, related_name="kept_deposits")
    deposit = models.ForeignKey(Deposit, on_delete=models.CASCADE, related_name="+", db_index=False)
    user_id = models.CharField(max_length=128)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["resolution", "deposit"], name="resolution_kept_unique")
        ]
        indexes = [models.Index(fields=["user_id", "deposit"], name="resolution_kept_user_deposit")]


# ---- Recall by meaning: vectors, the backlog, what each model is (recall-by-meaning.md) ----


class EmbeddingModel(models.Model):
    """A model recall by meaning has used, as the embedding job calibrated it (deposits.domain.meaning)."""

    name = models.CharField(max_length=200, primary_key=True)  # embedder and model, `local:…`
    dims = models.IntegerField()
    floor = models.FloatField()  # a deposit found by meaning alone comes closer than this
    centre = models.BinaryField()  # float32 × dims: where the binary codes split each dimension
    calibrated_at = models.DateTimeField()
    # When every deposit lacking a vector of this model was put in the backlog: once, as the
    # job first runs with it (a model change re-embeds everything that way).
    backlog_filled_at = models.DateTimeField(null=True)


class DepositVector(models.Model):
    """A deposit's vector by one model: int8 (exact cosine) and a binary code (candidates).

    Written by the embedding job alone, never inside a write; erased with its deposit."""

    id = models.BigAutoField(primary_key=True)
    deposit = models.ForeignKey(Deposit, on_delete=models.CASCADE, related_name="+", db_index=False)
    user_id = models.CharField(max_length=128)
    model = models.CharField(max_length=200)
    code = models.BinaryField()
    vector = models.BinaryField()
    created_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["deposit", "model"], name="vector_deposit_model")]
        # Recall reads an owner's codes of one model in id order, from where it last read.
        indexes = [models.Index(fields=["user_id", "model", "id"], name="vector_user_model")]


class EmbeddingPending(models.Model):
    """A deposit waiting for its vector: the embedding backlog.

    Each written deposit is put here by the database (a trigger on the deposits, whatever path
    writes them: deposits/0028) in its write's transaction; the embedding job takes it out when
    it writes the vector, or when the deposit needs none (retracted). A model change puts back
    every deposit lacking a vector of the new model."""

    deposit = models.OneToOneField(Deposit, on_delete=models.CASCADE, primary_key=True, related_name="+")
    user_id = models.CharField(max_length=128)
    queued_at = models.DateTimeField()

    class Meta:
        indexes = [
            models.Index(fields=["user_id", "queued_at"], name="pending_user_queued"),
            models.Index(fields=["queued_at"], name="pending_queued"),
        ]


class VectorHead(models.Model):
    """The newest vector an owner has of a model, written with the vectors.

    Recall asks it, in one key lookup, whether the owner's codes it holds in memory are current
    (deposits.search.meaning).
    """

    pk = models.CompositePrimaryKey("user_id", "model")
    user_id = models.CharField(max_length=128)
    model = models.CharField(max_length=200)
    last_id = models.BigIntegerField()

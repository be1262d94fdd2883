"""The record of every job run, and the rule that reports a run which stopped moving."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.utils import timezone


def lost_after() -> timedelta:
    """A running run whose progress has not moved this long is `lost` (JOB_LOST_AFTER_SECONDS)."""
    return timedelta(seconds=settings.JOB_LOST_AFTER_SECONDS)


def beat_lost_after() -> timedelta:
    """A running run whose worker's heartbeat is this old is `lost` (JOB_HEARTBEAT_LOST_AFTER_SECONDS)."""
    return timedelta(seconds=settings.JOB_HEARTBEAT_LOST_AFTER_SECONDS)


def heartbeat_every() -> float:
    """Seconds between a running run's heartbeats, so that one late beat never makes it lost.

    JOB_HEARTBEAT_SECONDS, and at least three beats within `beat_lost_after()`.
    """
    return min(settings.JOB_HEARTBEAT_SECONDS, settings.JOB_HEARTBEAT_LOST_AFTER_SECONDS / 3)


def stalled_after() -> timedelta:
    """A queued run no worker has taken this long is `stalled` (JOB_STALLED_AFTER_SECONDS)."""
    return timedelta(seconds=settings.JOB_STALLED_AFTER_SECONDS)


class Trigger(models.TextChoices):
    BEAT = "beat"
    COMMAND = "command"
    TIER_CHANGE = "tier_change"
    CHANNEL_CHANGE = "channel_change"
    DASHBOARD = "dashboard"
    API = "api", "API"


class Status(models.TextChoices):
    """What a run's row records; its reported status adds LOST and STALLED."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"


LOST = "lost"
STALLED = "stalled"
REPORTED_STATUSES = (*Status.values, LOST, STALLED)


def reported_status(
    *,
    status: str,
    queued_at: datetime,
    heartbeat_at: datetime | None,
    started_at: datetime | None,
    now: datetime,
    alive_at: datetime | None = None,
) -> str:
    """The status a run is reported with: its own, or `lost` or `stalled` when it stopped moving.

    A running run whose worker's heartbeat (`alive_at`) is `beat_lost_after()` old, or, with no
    heartbeat on record, whose progress has not moved for `lost_after()`, is `lost` (its worker
    died); a queued run no worker took in `stalled_after()` is `stalled`.

    A queued run waits from when it was recorded, or from when the sweep queued it again after
    it was lost (its `heartbeat_at`). `JobRunQuerySet.reported` is the same rule as a filter
    (`lost_rule`); a test holds the two together.
    """
    if status == Status.RUNNING and (
        alive_at < now - beat_lost_after()
        if alive_at is not None
        else (heartbeat_at or started_at or queued_at) < now - lost_after()
    ):
        return LOST
    if status == Status.QUEUED and (heartbeat_at or queued_at) < now - stalled_after():
        return STALLED
    return status


def lost_rule(now: datetime) -> Q:
    """`reported_status`'s rule for a lost running run, as a filter.

    Over the alias `last_sign` (Coalesce of heartbeat_at, started_at, queued_at).
    """
    return Q(alive_at__lt=now - beat_lost_after()) | Q(
        alive_at__isnull=True, last_sign__lt=now - lost_after()
    )


class JobRunQuerySet(models.QuerySet):
    def with_last_sign(self) -> JobRunQuerySet:
        return self.alias(last_sign=Coalesce("heartbeat_at", "started_at", "queued_at"))

    def reported(self, status: str, *, now: datetime) -> JobRunQuerySet:
        """Runs whose reported status is `status` (see `reported_status`)."""
        running = self.filter(status=Status.RUNNING).with_last_sign()
        queued = self.filter(status=Status.QUEUED).alias(waiting_since=Coalesce("heartbeat_at", "queued_at"))
        if status == LOST:
            return running.filter(lost_rule(now))
        if status == Status.RUNNING:
            return running.exclude(lost_rule(now))
        if status == STALLED:
            return queued.filter(waiting_since__lt=now - stalled_after())
        if status == Status.QUEUED:
            return queued.filter(waiting_since__gte=now - stalled_after())
        return self.filter(status=status)


class JobRun(models.Model):
    """One run of one job, whoever started it: its progress, outcome and counts.

    Only `atlaso_site.job_runs.services` writes it.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=64)
    trigger = models.CharField(max_length=16, choices=Trigger.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    # What the job was asked to do, e.g. {"channels": [...]} for a rebuild.
    params = models.JSONField(default=dict, blank=True)
    queued_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The last progress write, what `lost` is judged by; for a run the sweep queued again after
    # it was lost, when it did so (what `stalled` is then judged by).
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # The last heartbeat of the worker running it, written every few seconds whatever its
    # progress (null: no worker beats for it, e.g. one claimed inside a caller's transaction);
    # what `lost` is judged by when set.
    alive_at = models.DateTimeField(null=True, blank=True)
    # When its message was last handed to the broker (null: never, e.g. the broker was down).
    sent_at = models.DateTimeField(null=True, blank=True)
    # How many times a worker took it: more than 1 when a worker died and another finished it.
    # A database default too, so rows written by an older migration's model get one.
    attempts = models.PositiveIntegerField(default=0, db_default=0)
    done = models.IntegerField(default=0)
    total = models.IntegerField(default=0)
    counts = models.JSONField(default=dict, blank=True)
    error = models.TextField(null=True, blank=True)

    objects = JobRunQuerySet.as_manager()

    class Meta:
        ordering = ["-queued_at"]
        indexes = [
            models.Index(fields=["-queued_at"], name="jobrun_queued"),
            models.Index(fields=["name", "-queued_at"], name="jobrun_name_queued"),
            models.Index(fields=["status", "-queued_at"], name="jobrun_status_queued"),
        ]

    def __str__(self) -> str:
        return f"{self.name} {self.status} ({self.trigger}, {self.pk})"

    def reported_status_at(self, now: datetime) -> str:
        return reported_status(
            status=self.status,
            queued_at=self.queued_at,
            heartbeat_at=self.heartbeat_at,
            started_at=self.started_at,
            now=now,
            alive_at=self.alive_at,
        )

    @property
    def reported_status(self) -> str:
        return self.reported_status_at(timezone.now())


class ProcessRole(models.TextChoices):
    WORKER = "worker"
    BEAT = "beat"


class ProcessBeat(models.Model):
    """The last sign of life of one Celery worker or beat, which `/readyz` reads.

    One row each, by its node name, for the `worker` and `beat` checks. Written every few seconds by
    the process itself (`atlaso_site.observability.tasks`); a beat's row holds its scheduler's last
    tick, so a beat whose loop hung goes stale though its process lives.
    """

    role = models.CharField(max_length=16, choices=ProcessRole.choices)
    node = models.CharField(max_length=255)
    beat_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["role", "node"], name="processbeat_role_node")]
        indexes = [models.Index(fields=["role", "-beat_at"], name="processbeat_role_beat")]

    def __str__(self) -> str:
        return f"{self.role} {self.node} at {self.beat_at}"

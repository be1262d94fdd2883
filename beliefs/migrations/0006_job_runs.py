"""Rebuild jobs become job runs (atlaso_site.lib.jobs), then their table goes.

Each RebuildJob is copied into a JobRun of `rebuild_beliefs`: pending→queued, running→running,
done→succeeded, failed→failed; the trigger from the reason's words ("tier …" a tier change,
"channel …" a channel rebind, else by hand, a command). The values are written out: a migration
keeps meaning what it meant when written.
"""

import uuid

from django.db import migrations

STATUS = {"pending": "queued", "running": "running", "done": "succeeded", "failed": "failed"}


def _trigger(reason):
    if reason.startswith("tier "):
        return "tier_change"
    if reason.startswith("channel "):
        return "channel_change"
    return "command"


def copy_rebuilds(apps, schema_editor):
    RebuildJob = apps.get_model("beliefs", "RebuildJob")
    JobRun = apps.get_model("jobs", "JobRun")
    JobRun.objects.bulk_create(
        JobRun(
            id=uuid.uuid4(),
            name="rebuild_beliefs",
            trigger=_trigger(job.reason),
            status=STATUS.get(job.status, "failed"),
            params={"channels": None if job.channels == ["*"] else job.channels, "reason": job.reason},
            queued_at=job.created_at,
            started_at=job.started_at,
            finished_at=job.finished_at,
            heartbeat_at=job.finished_at or job.started_at,
            done=job.done,
            total=job.total,
            counts={"beliefs": job.total, "rebuilt": job.done, "changed": job.changed},
            error=job.error or None,
        )
        for job in RebuildJob.objects.order_by("pk").iterator()
    )


def copy_back(apps, schema_editor):
    RebuildJob = apps.get_model("beliefs", "RebuildJob")
    JobRun = apps.get_model("jobs", "JobRun")
    back = {new: old for old, new in STATUS.items()}
    for run in JobRun.objects.filter(name="rebuild_beliefs").order_by("queued_at"):
        channels = run.params.get("channels")
        job = RebuildJob.objects.create(
            reason=run.params.get("reason") or f"{run.name} ({run.trigger})",
            channels=["*"] if channels is None else channels,
            status=back.get(run.status, "failed"),
            total=run.total,
            done=run.done,
            changed=run.counts.get("changed", 0),
            error=run.error or "",
            started_at=run.started_at,
            finished_at=run.finished_at,
        )
        # created_at is auto_now_add: set it afterwards.
        RebuildJob.objects.filter(pk=job.pk).update(created_at=run.queued_at)
    JobRun.objects.filter(name="rebuild_beliefs").delete()


class Migration(migrations.Migration):
    dependencies = [
        ("beliefs", "0005_dashboard_roles"),
        ("jobs", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(copy_rebuilds, copy_back),
        migrations.DeleteModel(name="RebuildJob"),
    ]

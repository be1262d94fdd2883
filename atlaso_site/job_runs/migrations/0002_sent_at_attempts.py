"""Durable runs: when a run's message was last sent, and how many times a worker took it."""

from django.db import migrations, models


def count_past_attempts(apps, schema_editor):
    # A run that started was taken once; one still queued keeps no sent_at, so the sweep sends it.
    JobRun = apps.get_model("jobs", "JobRun")
    JobRun.objects.filter(started_at__isnull=False).update(attempts=1)


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="jobrun",
            name="sent_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="jobrun",
            name="attempts",
            field=models.PositiveIntegerField(db_default=0, default=0),
        ),
        migrations.RunPython(count_past_attempts, migrations.RunPython.noop),
    ]

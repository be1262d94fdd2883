"""Heartbeats: the last beat of the worker running a run, whatever its progress."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0002_sent_at_attempts"),
    ]

    operations = [
        migrations.AddField(
            model_name="jobrun",
            name="alive_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]

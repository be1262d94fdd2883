"""Process heartbeats: the last sign of life of each Celery worker and beat, read by /readyz."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0003_alive_at"),
    ]

    operations = [
        migrations.CreateModel(
            name="ProcessBeat",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("role", models.CharField(choices=[("worker", "Worker"), ("beat", "Beat")], max_length=16)),
                ("node", models.CharField(max_length=255)),
                ("beat_at", models.DateTimeField()),
            ],
            options={
                "indexes": [models.Index(fields=["role", "-beat_at"], name="processbeat_role_beat")],
                "constraints": [models.UniqueConstraint(fields=("role", "node"), name="processbeat_role_node")],
            },
        ),
    ]

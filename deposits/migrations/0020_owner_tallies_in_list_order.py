"""The owners' tallies indexed in the owners list's order, and the deployment's count of owners
holding live deposits (0021 counts the tallies and the deployment's counts once)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('deposits', '0019_owner_tallies'),
    ]

    operations = [
        migrations.CreateModel(
            name='DeploymentTally',
            fields=[
                ('id', models.PositiveSmallIntegerField(default=1, primary_key=True, serialize=False)),
                ('owners', models.IntegerField(default=0)),
            ],
        ),
        migrations.RemoveIndex(
            model_name='ownertally',
            name='owner_activity',
        ),
        migrations.RemoveIndex(
            model_name='ownertally',
            name='owner_deposits',
        ),
        migrations.RemoveIndex(
            model_name='ownertally',
            name='owner_conflicts',
        ),
        migrations.AddIndex(
            model_name='ownertally',
            index=models.Index(condition=models.Q(('live_deposits__gt', 0)), fields=['-last_activity', 'user_id'], name='owner_recent'),
        ),
        migrations.AddIndex(
            model_name='ownertally',
            index=models.Index(condition=models.Q(('live_deposits__gt', 0)), fields=['-live_deposits', 'user_id'], name='owner_largest'),
        ),
        migrations.AddIndex(
            model_name='ownertally',
            index=models.Index(condition=models.Q(('live_deposits__gt', 0)), fields=['-open_conflicts', 'user_id'], name='owner_most_conflicts'),
        ),
    ]

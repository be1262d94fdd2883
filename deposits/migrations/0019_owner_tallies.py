"""Each owner's tally (live deposits, open conflicts, last write), kept by the writes from now
on; 0021 counts the ones already written."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('deposits', '0018_open_episodes_oldest_first'),
    ]

    operations = [
        migrations.CreateModel(
            name='OwnerTally',
            fields=[
                ('user_id', models.CharField(max_length=128, primary_key=True, serialize=False)),
                ('live_deposits', models.IntegerField(default=0)),
                ('open_conflicts', models.IntegerField(default=0)),
                ('last_activity', models.DateTimeField()),
            ],
            options={
                'indexes': [models.Index(condition=models.Q(('live_deposits__gt', 0)), fields=['last_activity'], name='owner_activity'), models.Index(condition=models.Q(('live_deposits__gt', 0)), fields=['live_deposits'], name='owner_deposits'), models.Index(condition=models.Q(('live_deposits__gt', 0)), fields=['open_conflicts'], name='owner_conflicts')],
            },
        ),
    ]

"""The deployment's count of open conflicts, kept by the writes from now on and counted here once."""

from django.db import migrations, models


def count_open(apps, schema_editor):
    from deposits.services.owners import owner_tallies_rebuild

    owner_tallies_rebuild()


class Migration(migrations.Migration):

    dependencies = [
        ('deposits', '0020_owner_tallies_in_list_order'),
    ]

    operations = [
        migrations.AddField(
            model_name='deploymenttally',
            name='open_conflicts',
            field=models.IntegerField(default=0),
        ),
        migrations.RunPython(count_open, migrations.RunPython.noop),
    ]

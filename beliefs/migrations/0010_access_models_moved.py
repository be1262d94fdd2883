"""ApiKey, Channel and ProvenanceTier now belong to atlaso_site.access (its 0001): state only.

Their tables and rows stay; beliefs only stops claiming the models, after access has.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("beliefs", "0009_observation_keys"),
        ("access", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="ApiKey"),
                migrations.DeleteModel(name="Channel"),
                migrations.DeleteModel(name="ProvenanceTier"),
            ],
            database_operations=[],
        ),
    ]

"""A conflict episode remembers when the wait it carries on began (`waiting_since`): an Undo that
puts a bag back in conflict opens an episode dated at the undo, on a conflict that has waited
since long before. Episodes already open carry nothing on: none is known to."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("deposits", "0024_bag_terms_chunks")]

    operations = [
        migrations.AddField(
            model_name="conflictepisode",
            name="waiting_since",
            field=models.DateTimeField(null=True),
        ),
        migrations.AddIndex(
            model_name="conflictepisode",
            index=models.Index(
                condition=models.Q(("ended_at__isnull", True), ("waiting_since__isnull", False)),
                fields=["waiting_since"],
                name="episode_open_waiting",
            ),
        ),
    ]

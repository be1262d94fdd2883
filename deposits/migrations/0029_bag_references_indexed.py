"""Each table that names a bag, indexed by it: deleting a bag row (forgetting its owner) asks each
whether a row still names the bag, which without an index is a scan of the whole table per bag
(an owner of 8,000 bags in a store of 1M deposits took minutes to commit)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("deposits", "0028_imported_rows")]

    operations = [
        migrations.AddIndex(model_name="deposit", index=models.Index(fields=["bag"], name="deposit_bag")),
        migrations.AddIndex(model_name="conflictepisode", index=models.Index(fields=["bag"], name="episode_bag")),
        migrations.AddIndex(model_name="resolution", index=models.Index(fields=["bag"], name="resolution_bag")),
        migrations.AddIndex(model_name="reviewskip", index=models.Index(fields=["bag"], name="skip_bag")),
    ]

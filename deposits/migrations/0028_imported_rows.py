"""What an import wrote under another id than its file's (deposits.models.ImportedRow)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("deposits", "0027_scope_bags_in_nfc")]

    operations = [
        migrations.CreateModel(
            name="ImportedRow",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("user_id", models.CharField(max_length=128)),
                ("kind", models.CharField(max_length=16)),
                ("source", models.CharField(max_length=64)),
                ("target", models.CharField(max_length=64)),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("user_id", "kind", "source"), name="imported_row_source")
                ],
            },
        ),
    ]

"""The bag rules' inputs as stored generated columns, and the owners' covering index over them.

`directional`, `directional_kinds`, `kept_kinds` and `agreement` were worked out from the counts
by every query that read a bag's rule; the database now keeps them on write. The deployment's
pooled health reads every bag (diagnostics.md: computed when read), so its covering index
(PostgreSQL) carries these instead of the kept counts: 88,876 bags summed per owner in about
24 ms against 40.
"""

import django.db.models.expressions
import django.db.models.functions.comparison
import django.db.models.lookups
from django.db import migrations, models

INDEX = "bag_owner_live_counts"
BEFORE = "live_positive, live_negative, live_cautionary, live_open, kept_positive, kept_negative, kept_cautionary, kept_superseded, updated_at"
AFTER = "live_positive, live_negative, live_cautionary, live_open, updated_at, directional, directional_kinds, kept_kinds, kept_superseded, agreement"


def _index(columns: str):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")
            schema_editor.execute(f"CREATE INDEX {INDEX} ON deposits_scopebag (user_id) INCLUDE ({columns})")

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("deposits", "0008_bag_owner_counts_kept"),
    ]

    operations = [
        migrations.AddField(
            model_name="scopebag",
            name="agreement",
            field=models.GeneratedField(
                db_persist=True,
                expression=models.Case(
                    models.When(
                        django.db.models.lookups.GreaterThan(
                            django.db.models.expressions.CombinedExpression(
                                django.db.models.expressions.CombinedExpression(
                                    models.F("live_positive"), "+", models.F("live_negative")
                                ),
                                "+",
                                models.F("live_cautionary"),
                            ),
                            0,
                        ),
                        then=django.db.models.expressions.CombinedExpression(
                            django.db.models.functions.comparison.Cast(
                                django.db.models.functions.comparison.Greatest(
                                    "live_positive", "live_negative", "live_cautionary"
                                ),
                                models.FloatField(),
                            ),
                            "/",
                            django.db.models.functions.comparison.Cast(
                                django.db.models.expressions.CombinedExpression(
                                    django.db.models.expressions.CombinedExpression(
                                        models.F("live_positive"), "+", models.F("live_negative")
                                    ),
                                    "+",
                                    models.F("live_cautionary"),
                                ),
                                models.FloatField(),
                            ),
                        ),
                    ),
                    default=None,
                    output_field=models.FloatField(),
                ),
                output_field=models.FloatField(),
            ),
        ),
        migrations.AddField(
            model_name="scopebag",
            name="directional",
            field=models.GeneratedField(
                db_persist=True,
                expression=django.db.models.expressions.CombinedExpression(
                    django.db.models.expressions.CombinedExpression(
                        models.F("live_positive"), "+", models.F("live_negative")
                    ),
                    "+",
                    models.F("live_cautionary"),
                ),
                output_field=models.IntegerField(),
            ),
        ),
        migrations.AddField(
            model_name="scopebag",
            name="directional_kinds",
            field=models.GeneratedField(
                db_persist=True,
                expression=django.db.models.expressions.CombinedExpression(
                    django.db.models.expressions.CombinedExpression(
                        models.Case(
                            models.When(live_positive__gt=0, then=models.Value(1)),
                            default=models.Value(0),
                            output_field=models.IntegerField(),
                        ),
                        "+",
                        models.Case(
                            models.When(live_negative__gt=0, then=models.Value(1)),
                            default=models.Value(0),
                            output_field=models.IntegerField(),
                        ),
                    ),
                    "+",
                    models.Case(
                        models.When(live_cautionary__gt=0, then=models.Value(1)),
                        default=models.Value(0),
                        output_field=models.IntegerField(),
                    ),
                ),
                output_field=models.IntegerField(),
            ),
        ),
        migrations.AddField(
            model_name="scopebag",
            name="kept_kinds",
            field=models.GeneratedField(
                db_persist=True,
                expression=django.db.models.expressions.CombinedExpression(
                    django.db.models.expressions.CombinedExpression(
                        models.Case(
                            models.When(kept_positive__gt=0, then=models.Value(1)),
                            default=models.Value(0),
                            output_field=models.IntegerField(),
                        ),
                        "+",
                        models.Case(
                            models.When(kept_negative__gt=0, then=models.Value(1)),
                            default=models.Value(0),
                            output_field=models.IntegerField(),
                        ),
                    ),
                    "+",
                    models.Case(
                        models.When(kept_cautionary__gt=0, then=models.Value(1)),
                        default=models.Value(0),
                        output_field=models.IntegerField(),
                    ),
                ),
                output_field=models.IntegerField(),
            ),
        ),
        migrations.RunPython(_index(AFTER), _index(BEFORE)),
    ]

"""Create the dashboard's two roles, the groups `reviewer` and `operator`.

Here because the groups belong to no model of ours and beliefs is the lowest app with
migrations (the kernel that checks the roles, atlaso_site.lib.dashboard_access, is no app);
the names are written out, as a migration must keep meaning what it meant when written.
"""

from django.db import migrations

ROLES = ("reviewer", "operator")


def create_roles(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    for name in ROLES:
        Group.objects.get_or_create(name=name)


def delete_roles(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=ROLES).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("beliefs", "0004_append_only_revisions"),
    ]
    operations = [migrations.RunPython(create_roles, delete_roles)]

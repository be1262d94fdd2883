"""Seed the eight default provenance tiers and the human_review channel."""

from django.db import migrations

TIERS = {
    "user_edit": (0.99, "The owner edited the fact themselves"),
    "user_direct": (0.98, "The owner said it directly"),
    "agent_own": (0.80, "This agent's own reasoning or observation"),
    "tool_output": (0.65, "Output of a tool the agent ran"),
    "document": (0.55, "A document the owner supplied"),
    "agent_third_party": (0.40, "Another agent relayed it"),
    "web_fetch": (0.30, "Fetched from the web"),
    "untrusted": (0.10, "Anything else; a new channel's default"),
}


def seed(apps, schema_editor):
    Tier = apps.get_model("beliefs", "ProvenanceTier")
    Channel = apps.get_model("beliefs", "Channel")
    for name, (ceiling, description) in TIERS.items():
        Tier.objects.get_or_create(name=name, defaults={"ceiling": ceiling, "description": description})
    Channel.objects.get_or_create(
        name="human_review",
        defaults={
            "tier": Tier.objects.get(name="user_edit"),
            "description": "People resolving conflicts and confirming beliefs in the dashboard",
        },
    )


class Migration(migrations.Migration):
    dependencies = [("beliefs", "0001_initial")]
    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]

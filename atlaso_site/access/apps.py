"""The access layer as an app: it owns the tier, channel and API-key models and their commands."""

from django.apps import AppConfig


class AccessConfig(AppConfig):
    name = "atlaso_site.access"
    label = "access"
    verbose_name = "Access: tiers, channels and API keys"
    default_auto_field = "django.db.models.BigAutoField"

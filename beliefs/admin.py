from django.contrib import admin

from beliefs.models import ApiKey, Channel, ProvenanceTier


@admin.register(ProvenanceTier)
class ProvenanceTierAdmin(admin.ModelAdmin):
    list_display = ("name", "ceiling", "description")


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin):
    list_display = ("name", "tier", "created_at")
    list_select_related = ("tier",)


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "display_prefix",
        "channel",
        "permissions",
        "user_prefix",
        "last_used_at",
        "revoked_at",
    )
    readonly_fields = ("secret_hash", "display_prefix", "created_at", "last_used_at")
    list_select_related = ("channel",)

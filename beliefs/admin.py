"""The admin for provenance and beliefs.

Tiers, channels and API keys change only through the services the API uses, so a rebind
records its rebuild run and a key gets a real secret. The belief tables are shown read-only:
services alone write them (the job runs are shown by atlaso_site.job_runs.admin).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, Model, QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from atlaso_site.access.models import DEFAULT_CHANNEL_TIER, PERMISSIONS, ApiKey, Channel, ProvenanceTier
from atlaso_site.job_runs.models import JobRun
from atlaso_site.ui.admin import ReadOnlyAdminMixin
from beliefs.models import Belief, BeliefRevision, CalibrationOutcome
from beliefs.services import (
    DEFAULT_PERMISSIONS,
    ProvenanceError,
    api_key_create,
    api_key_revoke,
    channel_bind,
    tier_update,
)

USER_ID_SEARCH = ("user_id__exact",)
USER_ID_SEARCH_HELP = "an owner's exact user_id"


# --- Provenance: written through the services ------------------------------------------------


class ServiceForm(forms.ModelForm):
    """A model form whose save is a service call, made once every other check has passed.

    The call is the last step of validation (where Django's UserCreationForm checks its
    password), inside the admin's transaction, so a ProvenanceError shows as a form error like
    any other and leaves nothing written; the admin's save_model then has nothing to save.
    """

    rebuild_job: JobRun | None = None
    # Who is saving: the admin's username, set per request by ServiceAdmin.get_form.
    actor: str = ""

    def _post_clean(self) -> None:
        super()._post_clean()
        if self.errors:
            return
        try:
            with transaction.atomic():
                self.instance = self.apply()
        except ProvenanceError as error:
            self.add_error(None, str(error))

    def apply(self) -> Model:
        """Call the service with the cleaned data; return what it wrote."""
        raise NotImplementedError


class ServiceAdmin(admin.ModelAdmin):
    """An admin whose form has already written through a service by the time it saves."""

    def get_form(self, request: HttpRequest, obj: Any = None, **kwargs: Any) -> type[forms.ModelForm]:
        form = super().get_form(request, obj, **kwargs)
        # The services record who made each change: this request's admin.
        return type(form.__name__, (form,), {"actor": request.user.get_username()})

    def save_model(self, request: HttpRequest, obj: Model, form: ServiceForm, change: bool) -> None:
        job = form.rebuild_job
        if job is not None:
            link = reverse("admin:jobs_jobrun_change", args=[job.pk])
            self.message_user(
                request,
                format_html(
                    'A rebuild_beliefs run (<a href="{}">{}</a>) was queued for the {} beliefs this '
                    "change touches; until it finishes they keep the trust they had.",
                    link,
                    job.pk,
                    job.total,
                ),
            )


class TierForm(ServiceForm):
    class Meta:
        model = ProvenanceTier
        fields = ("ceiling", "description")

    def validate_constraints(self) -> None:
        """Leave the ceiling's bounds to tier_update, which says them in words."""

    def apply(self) -> ProvenanceTier:
        tier, self.rebuild_job = tier_update(
            name=self.instance.name,
            ceiling=self.cleaned_data["ceiling"],
            description=self.cleaned_data["description"],
            actor=self.actor,
        )
        return tier


@admin.register(ProvenanceTier)
class ProvenanceTierAdmin(ServiceAdmin):
    form = TierForm
    list_display = ("name", "ceiling", "description", "channel_count")
    fields = ("name", "ceiling", "description")
    readonly_fields = ("name",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[ProvenanceTier]:
        return super().get_queryset(request).annotate(channel_count=Count("channels"))

    @admin.display(description="channels", ordering="channel_count")
    def channel_count(self, tier: ProvenanceTier) -> int:
        return tier.channel_count  # type: ignore[attr-defined]

    def has_add_permission(self, request: HttpRequest) -> bool:
        # The tiers come from a migration, and no service adds or removes one.
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ChannelForm(ServiceForm):
    class Meta:
        model = Channel
        fields = ("name", "tier", "description")

    def apply(self) -> Channel:
        channel, self.rebuild_job = channel_bind(
            # On a change page the name is read-only: the instance still carries it.
            name=self.instance.name,
            tier_name=self.cleaned_data["tier"].name,
            description=self.cleaned_data["description"],
            actor=self.actor,
        )
        return channel


@admin.register(Channel)
class ChannelAdmin(ServiceAdmin):
    form = ChannelForm
    list_display = ("name", "tier", "description", "created_at")
    list_filter = ("tier",)
    search_fields = ("name",)
    list_select_related = ("tier",)

    def get_fields(self, request: HttpRequest, obj: Channel | None = None) -> tuple[str, ...]:
        return ("name", "tier", "description", "created_at") if obj else ("name", "tier", "description")

    def get_readonly_fields(self, request: HttpRequest, obj: Channel | None = None) -> tuple[str, ...]:
        # Revisions cite a channel by name, so the name is chosen once.
        return ("name", "created_at") if obj else ()

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Keys and revisions refer to it; revoke the keys instead.
        return False


class ChannelChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Channel) -> str:
        return f"{obj.name} (tier {obj.tier.name})"


class ApiKeyAddForm(ServiceForm):
    """A new key: on an existing channel, or on a new one created on a tier."""

    channel = ChannelChoiceField(
        Channel.objects.select_related("tier"),
        required=False,
        help_text="The key writes on this channel, with the trust of its tier.",
    )
    new_channel = forms.SlugField(
        max_length=64,
        required=False,
        label="Or a new channel",
        help_text="A name for a channel to create for this key.",
    )
    tier = forms.ModelChoiceField(
        ProvenanceTier.objects.all(),
        required=False,
        help_text=f"The new channel's tier ({DEFAULT_CHANNEL_TIER} if none). An existing channel keeps "
        "its own: rebind it on the channel's page.",
    )
    permissions = forms.MultipleChoiceField(
        choices=[(permission, permission) for permission in PERMISSIONS],
        widget=forms.CheckboxSelectMultiple,
        initial=list(DEFAULT_PERMISSIONS),
    )

    secret: str = ""

    class Meta:
        model = ApiKey
        fields = ("name", "user_prefix")
        help_texts = {"user_prefix": "Confine the key to user_ids starting with this (empty: every owner)."}

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if self.has_error("channel") or self.has_error("new_channel"):
            return cleaned
        if bool(cleaned.get("channel")) == bool(cleaned.get("new_channel")):
            raise ValidationError("Choose an existing channel or name a new one, not both.")
        return cleaned

    def apply(self) -> ApiKey:
        data = self.cleaned_data
        key, self.secret = api_key_create(
            name=data["name"],
            channel_name=data["channel"].name if data["channel"] else data["new_channel"],
            tier_name=data["tier"].name if data["tier"] else None,
            permissions=data["permissions"],
            user_prefix=data["user_prefix"],
            actor=self.actor,
        )
        return key


@admin.register(ApiKey)
class ApiKeyAdmin(ServiceAdmin):
    """Keys are added (the secret is shown once) and revoked; nothing else about one changes."""

    list_display = (
        "name",
        "display_prefix",
        "channel",
        "tier",
        "permissions",
        "user_prefix",
        "created_at",
        "last_used_at",
        "revoked_at",
    )
    list_filter = (("revoked_at", admin.EmptyFieldListFilter), "channel__tier", "channel")
    search_fields = ("name", "display_prefix", "user_prefix")
    list_select_related = ("channel__tier",)
    actions = ("revoke",)
    # The secret's hash is never shown: the prefix tells keys apart.
    fields = (
        "name",
        "channel",
        "display_prefix",
        "permissions",
        "user_prefix",
        "created_at",
        "last_used_at",
        "revoked_at",
    )
    add_fieldsets = (
        (None, {"fields": ("name", "channel", "new_channel", "tier", "permissions", "user_prefix")}),
    )

    @admin.display(description="tier", ordering="channel__tier__ceiling")
    def tier(self, key: ApiKey) -> str:
        return key.channel.tier.name

    def get_fieldsets(self, request: HttpRequest, obj: ApiKey | None = None) -> Any:
        return self.add_fieldsets if obj is None else super().get_fieldsets(request, obj)

    def get_form(
        self, request: HttpRequest, obj: ApiKey | None = None, **kwargs: Any
    ) -> type[forms.ModelForm]:
        if obj is None:
            kwargs["form"] = ApiKeyAddForm
        return super().get_form(request, obj, **kwargs)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # A key is created, used and revoked; no service edits one.
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Revoke instead: a revoked key still tells which key wrote what.
        return False

    def has_revoke_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("access.change_apikey")

    @admin.action(description="Revoke the selected API keys", permissions=["revoke"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        keys = list(queryset.filter(revoked_at__isnull=True))
        for key in keys:
            api_key_revoke(key=key, actor=request.user.get_username())
        self.message_user(request, f"Revoked {len(keys)} API key(s): they answer 401 from now on.")

    def save_model(self, request: HttpRequest, obj: ApiKey, form: ApiKeyAddForm, change: bool) -> None:
        # Kept on the request, not the key: it is for this one response and never stored.
        request.api_key_secret = form.secret  # type: ignore[attr-defined]

    def response_add(
        self, request: HttpRequest, obj: ApiKey, post_url_continue: str | None = None
    ) -> HttpResponse:
        """A page with the secret, instead of the usual redirect: shown once, never stored."""
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "API key created",
            "key": obj,
            "secret": request.api_key_secret,  # type: ignore[attr-defined]
        }
        return TemplateResponse(request, "admin/access/apikey/secret.html", context)


# --- Beliefs: read-only ----------------------------------------------------------------------


@admin.register(Belief)
class BeliefAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = (
        "user_id",
        "key",
        "fact",
        "probability",
        "is_uncertain",
        "observation_count",
        "last_observed_at",
        "updated_at",
    )
    list_filter = ("is_uncertain", "updated_at")
    search_fields = USER_ID_SEARCH
    search_help_text = USER_ID_SEARCH_HELP
    ordering = ("user_id", "key")


@admin.register(BeliefRevision)
class BeliefRevisionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = (
        "id",
        "user_id",
        "belief_key",
        "value",
        "channel",
        "tier",
        "reliability",
        "effective",
        "posterior",
        "observed_at",
        "arrived_at",
    )
    list_filter = ("effective", "lifted", "arrived_at")
    search_fields = USER_ID_SEARCH
    search_help_text = USER_ID_SEARCH_HELP
    ordering = ("-id",)


@admin.register(CalibrationOutcome)
class CalibrationOutcomeAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = (
        "user_id",
        "belief_key",
        "confirmed_value",
        "top_value",
        "top_probability",
        "correct",
        "tier",
        "created_at",
    )
    list_filter = ("correct", "tier", "created_at")
    search_fields = USER_ID_SEARCH
    search_help_text = USER_ID_SEARCH_HELP
    ordering = ("-created_at",)

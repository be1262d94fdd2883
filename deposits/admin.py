"""The store in the admin, read-only: deposits are immutable and only the services write bags and edges."""

from __future__ import annotations

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.text import Truncator

from atlaso_site.ui.admin import ReadOnlyAdminMixin, known_values_filter
from deposits.domain.types import EVIDENCE_GRADES, POLARITIES, REPRO_STATUSES
from deposits.models import Contradiction, Deposit, ScopeBag

USER_ID_SEARCH = ("user_id__exact",)
USER_ID_SEARCH_HELP = "an owner's exact user_id"


def _link(view: str, pk: object) -> SafeString:
    """A link to a row's admin page by its id alone, so a list never loads the row itself."""
    return format_html('<a href="{}">{}</a>', reverse(f"admin:{view}", args=[pk]), pk)


@admin.register(ScopeBag)
class ScopeBagAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = (
        "id",
        "user_id",
        "model",
        "dataset",
        "env",
        "version",
        "n",
        "seed",
        "live_positive",
        "live_negative",
        "live_cautionary",
        "live_open",
        "last_deposit_at",
    )
    list_filter = ("last_deposit_at", "created_at")
    search_fields = USER_ID_SEARCH
    search_help_text = USER_ID_SEARCH_HELP
    ordering = ("-updated_at",)


@admin.register(Deposit)
class DepositAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = (
        "id",
        "user_id",
        "polarity",
        "evidence_grade",
        "claim",
        "bag_link",
        "channel",
        "repro_status",
        "created_at",
        "retracted_at",
    )
    list_filter = (
        known_values_filter("polarity", POLARITIES),
        known_values_filter("evidence_grade", EVIDENCE_GRADES),
        known_values_filter("repro_status", REPRO_STATUSES),
        ("retracted_at", admin.EmptyFieldListFilter),
        "created_at",
    )
    search_fields = USER_ID_SEARCH
    search_help_text = USER_ID_SEARCH_HELP
    ordering = ("-created_at",)

    @admin.display(description="content")
    def claim(self, deposit: Deposit) -> str:
        return Truncator(deposit.content).chars(80)

    @admin.display(description="bag", ordering="bag_id")
    def bag_link(self, deposit: Deposit) -> SafeString:
        return _link("deposits_scopebag_change", deposit.bag_id)


@admin.register(Contradiction)
class ContradictionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("id", "user_id", "newer", "older", "reason", "created_at")
    list_filter = ("created_at",)
    search_fields = USER_ID_SEARCH
    search_help_text = USER_ID_SEARCH_HELP
    ordering = ("-created_at",)

    @admin.display(description="newer deposit (supersedes)", ordering="new_deposit_id")
    def newer(self, edge: Contradiction) -> SafeString:
        return _link("deposits_deposit_change", edge.new_deposit_id)

    @admin.display(description="older deposit (superseded)", ordering="old_deposit_id")
    def older(self, edge: Contradiction) -> SafeString:
        return _link("deposits_deposit_change", edge.old_deposit_id)

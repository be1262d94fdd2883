"""Admin pieces every app's admin uses; imports no app."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest


class ReadOnlyAdminMixin:
    """A model admin that shows rows and never adds, changes or deletes them.

    For tables that only services write (deposits, beliefs, their logs and jobs): an edit
    here would skip the rules and the counters those services keep. Put it before
    `admin.ModelAdmin` in the bases.
    """

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def known_values_filter(field: str, values: Sequence[str]) -> type[admin.SimpleListFilter]:
    """A list filter on a text column whose few values the code knows.

    Django's filter for a plain column reads them with SELECT DISTINCT over the whole table
    on every page of the list; these are listed without a query.
    """

    class KnownValuesFilter(admin.SimpleListFilter):
        title = field.replace("_", " ")
        parameter_name = field

        def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
            return [(value, value) for value in values]

        def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
            value = self.value()
            return queryset.filter(**{field: value}) if value else queryset

    return KnownValuesFilter

"""Job runs in the admin: shown, never edited (only the runner writes them)."""

from __future__ import annotations

from django.contrib import admin

from atlaso_site.job_runs.models import JobRun, Status, Trigger
from atlaso_site.ui.admin import ReadOnlyAdminMixin, known_values_filter


@admin.register(JobRun)
class JobRunAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = (
        "id",
        "name",
        "trigger",
        "reported_status",
        "done",
        "total",
        "attempts",
        "queued_at",
        "sent_at",
        "started_at",
        "finished_at",
    )
    list_filter = (
        known_values_filter("status", Status.values),
        known_values_filter("trigger", Trigger.values),
        "queued_at",
    )
    search_fields = ("name__exact",)
    search_help_text = "a job's exact name, e.g. rebuild_beliefs"
    ordering = ("-queued_at",)

    @admin.display(description="status", ordering="status")
    def reported_status(self, run: JobRun) -> str:
        return run.reported_status

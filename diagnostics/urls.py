"""The dashboard pages of diagnostics; the paths are fixed: outside browser tests use them."""

from __future__ import annotations

from django.urls import path

from diagnostics import views, views_portability

app_name = "diagnostics"

urlpatterns = [
    path("", views.overview, name="overview"),
    path("owners/", views.owner_list, name="owners"),
    path("owners/<str:user_id>/", views.owner_detail, name="owner"),
    path("owners/<str:user_id>/export/", views_portability.owner_export, name="owner-export"),
    path("owners/<str:user_id>/forget/", views_portability.owner_forget_page, name="owner-forget"),
    path("health/", views.health_trends, name="health"),
    path("jobs/", views.job_runs, name="jobs"),
    path("help/", views.help_page, name="help"),
    path("jobs/runs/<str:run_id>/", views.job_run, name="job-run"),
    path("jobs/<str:name>/start/", views.job_start, name="job-start"),
]

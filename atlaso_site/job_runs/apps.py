from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "atlaso_site.job_runs"
    label = "jobs"
    verbose_name = "Job runs"
    default_auto_field = "django.db.models.BigAutoField"

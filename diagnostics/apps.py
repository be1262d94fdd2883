from django.apps import AppConfig


class DiagnosticsConfig(AppConfig):
    name = "diagnostics"
    verbose_name = "Diagnostics"

    def ready(self) -> None:
        # The runner is this top app: runs recorded anywhere below (a tier change in beliefs)
        # reach a worker through it, and the kernel that records them knows no Celery.
        from atlaso_site.job_runs.services import set_dispatcher
        from diagnostics.tasks import dispatch

        set_dispatcher(dispatch)

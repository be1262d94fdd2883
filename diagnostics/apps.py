from django.apps import AppConfig


class DiagnosticsConfig(AppConfig):
    name = "diagnostics"
    verbose_name = "Diagnostics"

    def ready(self) -> None:
        # The runner is this top app: runs recorded anywhere below (a tier change in beliefs)
        # reach a worker through it, and the kernel that records them knows no Celery.
        from atlaso_site.job_runs.services import set_dispatcher
        from deposits.services.embedding import set_embed_trigger
        from diagnostics.tasks import ask_for_embedding, dispatch

        set_dispatcher(dispatch)
        # Writes ask for an embedding run once they commit, through the same broker.
        set_embed_trigger(ask_for_embedding)

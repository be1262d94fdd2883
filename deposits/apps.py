from django.apps import AppConfig


class DepositsConfig(AppConfig):
    name = "deposits"
    verbose_name = "Deposits"

    def ready(self) -> None:
        # The embedder's configuration, which `manage.py check` reports on.
        from deposits import checks  # noqa: F401

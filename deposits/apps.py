from django.apps import AppConfig


class DepositsConfig(AppConfig):
    name = "deposits"
    verbose_name = "Deposits"

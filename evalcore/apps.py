from django.apps import AppConfig


class EvalcoreConfig(AppConfig):
    name = "evalcore"
    verbose_name = "Eval sets, runs and gates"

from django.apps import AppConfig


class EvalcoreConfig(AppConfig):
    name = "evalcore"
    verbose_name = "Eval sets, runs and gates"

    def ready(self) -> None:
        from .jobs import kinds, worker  # noqa: F401  (registers evalcore's job kinds; connects the worker's start-up)

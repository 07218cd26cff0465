from django.apps import AppConfig


class EvalcoreConfig(AppConfig):
    name = "evalcore"
    verbose_name = "Eval sets, runs and gates"

    def ready(self) -> None:
        from . import jobs  # noqa: F401  (registers evalcore's job kinds)

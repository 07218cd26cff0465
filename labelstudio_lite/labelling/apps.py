from django.apps import AppConfig


class LabellingConfig(AppConfig):
    name = "labelstudio_lite.labelling"
    label = "labelling"
    verbose_name = "Labelling campaigns"

    def ready(self) -> None:
        from . import jobs  # noqa: F401  (registers the labelling job handlers)

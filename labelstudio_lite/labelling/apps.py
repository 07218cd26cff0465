from django.apps import AppConfig


class LabellingConfig(AppConfig):
    name = "labelstudio_lite.labelling"
    label = "labelling"
    verbose_name = "Labelling campaigns"

    def ready(self) -> None:
        from evalcore.services.judge_fitness import register_judge_validation_source

        from . import jobs  # noqa: F401  (registers the labelling job handlers)
        from .services.judge_validation import CampaignValidations

        register_judge_validation_source(CampaignValidations())

from django.apps import AppConfig


class LabellingConfig(AppConfig):
    name = "labelstudio_lite.labelling"
    label = "labelling"
    verbose_name = "Labelling campaigns"

    def ready(self) -> None:
        from evalcore.jobs import bias_kinds, labelling_kinds  # noqa: F401  (registers the labelling job kinds)
        from evalcore.services.judge_configs import register_few_shot_source
        from evalcore.services.judge_fitness import register_judge_validation_source

        from .services.judge_validation import CampaignValidations
        from .services.tuned_prompt import few_shot_examples

        register_judge_validation_source(CampaignValidations())
        register_few_shot_source(few_shot_examples)

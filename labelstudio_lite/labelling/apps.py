from django.apps import AppConfig


class LabellingConfig(AppConfig):
    name = "labelstudio_lite.labelling"
    label = "labelling"
    verbose_name = "Labelling campaigns"

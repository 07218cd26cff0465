"""The bias battery page's forms (the service checks every value again)."""

from __future__ import annotations

from django import forms

from evalcore.engine.multiplicity import CORRECTIONS
from evalcore.forms import valid_name
from evalcore.judging.probes import FIELDS, OWNER_KINDS
from evalcore.models import JudgeConfig

from .services.bias_battery import DEFAULT_ALPHA, DEFAULT_BAR, available_probes


class BiasBatteryForm(forms.Form):
    judge_config = forms.ModelChoiceField(
        queryset=None, label="Judge config", help_text="A runnable config (it names an endpoint kind)."
    )
    probes = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: every probe. The placebo always runs.",
    )
    bar = forms.FloatField(
        min_value=0,
        max_value=0.99,
        initial=DEFAULT_BAR,
        help_text="A probe blocks gating when its flip rate beyond the placebo is significant and above this.",
    )
    alpha = forms.FloatField(min_value=0.001, max_value=0.5, initial=DEFAULT_ALPHA, label="Family-wise level")
    correction = forms.ChoiceField(choices=[(c, c) for c in CORRECTIONS], initial="holm")

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.fields["judge_config"].queryset = JudgeConfig.objects.exclude(endpoint_kind="").order_by("name")
        self.fields["probes"].choices = [
            (spec.name, f"{spec.label}: {spec.describes}") for spec in available_probes() if not spec.is_placebo
        ]


class BiasProbeForm(forms.Form):
    name = forms.CharField(max_length=100, validators=[valid_name])
    kind = forms.ChoiceField(choices=[(k, k) for k in OWNER_KINDS])
    field = forms.ChoiceField(choices=[(f, f) for f in FIELDS], initial="answer")
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), help_text="What the probe adds, as it is.")
    describes = forms.CharField(
        max_length=300, help_text="In a verdict's words, e.g. 'when the answer thanks the reader'."
    )

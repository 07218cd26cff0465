"""Forms for the upload and compare pages: they validate input and say what is wrong, per field."""

from __future__ import annotations

import math

from django import forms
from django.core.validators import validate_slug

from .models import Run
from .services.fields import FieldError, parse_json_object
from .services.readers import FORMATS

FORMAT_CHOICES = [("", "from the file extension")] + [(f, f) for f in FORMATS]


class EvalSetImportForm(forms.Form):
    file = forms.FileField(help_text="JSON Lines, CSV, Parquet, a Ragas table or TREC qrels.")
    name = forms.CharField(max_length=100, validators=[validate_slug], help_text="New or existing eval set name.")
    format = forms.ChoiceField(choices=FORMAT_CHOICES, required=False)
    extend = forms.BooleanField(
        required=False, help_text="Add these questions to the latest version instead of replacing them."
    )
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))


def json_object_field(text: str, what: str) -> dict | None:
    """Clean a form field holding a JSON object (a config): None when blank; the input limits apply."""
    if not text.strip():
        return None
    try:
        return parse_json_object(text, what)
    except FieldError as error:
        raise forms.ValidationError(f"the {what} {error.message}") from None


class RunImportForm(forms.Form):
    file = forms.FileField(help_text="JSON Lines, CSV, Parquet, a Ragas table or a TREC run.")
    evalset = forms.CharField(max_length=120, help_text="NAME (latest version) or NAME@VERSION.")
    name = forms.CharField(max_length=150, validators=[validate_slug])
    format = forms.ChoiceField(choices=FORMAT_CHOICES, required=False)
    k = forms.IntegerField(
        min_value=1, required=False, help_text="Chunks that reach the model; default: the most context_ids in a row."
    )
    gain = forms.ChoiceField(choices=[("exponential", "2^g − 1"), ("linear", "g")], initial="exponential")
    chunks = forms.FileField(required=False, help_text="Chunk map (id, doc, start, end), when gold is given as spans.")
    judge_config = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="JSON: model, model_version, prompt, temperature, claim_splitting, library_versions.",
    )
    system_config = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="JSON: retriever, reranker, chunking, prompt, ...",
    )

    def clean_judge_config(self) -> dict | None:
        return json_object_field(self.cleaned_data["judge_config"], "judge config")

    def clean_system_config(self) -> dict | None:
        return json_object_field(self.cleaned_data["system_config"], "system config")


class CompareForm(forms.Form):
    base = forms.ModelChoiceField(queryset=Run.objects.select_related("version__eval_set"), label="Baseline")
    candidate = forms.ModelChoiceField(queryset=Run.objects.select_related("version__eval_set"), label="Candidate")
    slice_by = forms.ChoiceField(choices=[("type", "question type"), ("none", "no slices")], initial="type")
    margin = forms.FloatField(
        min_value=0.0, max_value=1000.0, initial=0.02, help_text="Largest drop you ship without discussion."
    )
    margins = forms.CharField(
        required=False, help_text="Per-metric margins, e.g. faithfulness=0.01, answer_relevance=0.1"
    )
    metrics = forms.CharField(required=False, help_text="Comma-separated; empty for every shared metric.")
    judge_policy = forms.ChoiceField(
        choices=[
            ("", "the default (GATE_JUDGE_POLICY)"),
            ("review", "review: an unvalidated or unfit judge sends its metrics to review"),
            ("warn", "warn: the decision stands, with the judge's validation beside it"),
            ("off", "off: record only"),
        ],
        required=False,
        label="Judge policy",
    )
    lower_is_better = forms.CharField(
        required=False,
        label="Lower is better",
        help_text="Comma-separated metrics where a rise is a regression (latency, cost, ...).",
    )

    def clean_margins(self) -> dict[str, float]:
        out = {}
        for part in filter(None, (p.strip() for p in self.cleaned_data["margins"].split(","))):
            metric, sep, value = part.partition("=")
            try:
                number = float(value)
            except ValueError:
                number = -1.0
            if not sep or not math.isfinite(number) or number < 0:
                raise forms.ValidationError(f"{part!r}: write METRIC=VALUE with a finite value of 0 or more")
            out[metric.strip()] = number
        return out

    def clean_metrics(self) -> list[str]:
        return _names(self.cleaned_data["metrics"])

    def clean_lower_is_better(self) -> list[str]:
        return _names(self.cleaned_data["lower_is_better"])


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


class RowFilterForm(forms.Form):
    type = forms.CharField(required=False)
    metric = forms.CharField(required=False)
    low = forms.FloatField(required=False)
    high = forms.FloatField(required=False)
    q = forms.CharField(required=False, max_length=200)
    page = forms.IntegerField(required=False, min_value=1)

"""The labelling app's forms (pages only; the services check every value again)."""

from __future__ import annotations

import re

from django import forms
from django.contrib.auth import get_user_model

from evalcore.forms import json_object_field, valid_name
from evalcore.models import JudgeConfig, Run

from .models import Campaign
from .services.exports import DISAGREEMENT_FORMATS
from .services.label_sources import LABEL_FORMATS


class CampaignForm(forms.Form):
    name = forms.CharField(max_length=100, validators=[valid_name])
    run = forms.ModelChoiceField(queryset=Run.objects.select_related("version__eval_set").order_by("-created_at"))
    unit = forms.ChoiceField(choices=Campaign.Unit.choices, initial=Campaign.Unit.CLAIM)
    size = forms.IntegerField(
        min_value=1,
        initial=200,
        help_text="At least 200 per judge metric; a size at or above the run's items takes them all.",
    )
    heldout_fraction = forms.FloatField(
        min_value=0.0,
        max_value=1.0,
        initial=0.3,
        label="Held-out fraction",
        help_text="Kept aside to re-measure the judge on labels it was never tuned on.",
    )
    overlap = forms.IntegerField(min_value=1, max_value=20, initial=1, help_text="Different annotators per item.")
    seed = forms.IntegerField(min_value=0, initial=7, help_text="The same seed gives the same items.")
    annotators = forms.ModelMultipleChoiceField(
        queryset=get_user_model().objects.filter(is_active=True).order_by("username"),
        required=False,
        widget=forms.SelectMultiple(attrs={"size": 5}),
        help_text="People who already have an account; invite new ones on the People page, straight into the campaign.",
    )
    judge_question = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="The question the judge answers, verbatim; default by unit.",
    )
    guidance = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        label="Guideline",
        help_text="What annotators see; it becomes version 1 (a change later is a new version).",
    )
    metric = forms.CharField(
        max_length=100,
        required=False,
        initial="faithfulness",
        help_text="The judge metric validated: faithfulness, answer_relevance, correctness, or any score of the run.",
    )
    scale = forms.ChoiceField(
        choices=[("binary", "Pass / fail (the metric's words)"), ("ordinal", "Ordinal scale")],
        initial="binary",
        required=False,
    )
    scale_min = forms.IntegerField(required=False, min_value=0, max_value=9, label="Scale from", help_text="e.g. 1")
    scale_max = forms.IntegerField(required=False, min_value=1, max_value=9, label="Scale to", help_text="e.g. 5")
    fail_at = forms.FloatField(
        required=False, label="Failure class at or below", help_text="Ordinal: scores at or below this fail (e.g. 2)."
    )
    allocation = forms.ChoiceField(
        choices=[
            ("floor", "Verdict floor: the rare verdict gets a quarter"),
            ("neyman", "Neyman: where the judge is least reliable"),
        ],
        initial="floor",
        required=False,
        label="Tuning items",
        help_text="Held-out items are drawn at random either way; each item records its inclusion probability, and every "
        "estimate weighs its label back by it.",
    )
    pass_disagreement = forms.FloatField(
        min_value=0.0,
        max_value=1.0,
        required=False,
        label="Neyman: people fail of the judge's passes",
        help_text="Your guess, a share; blank: 0.15.",
    )
    fail_disagreement = forms.FloatField(
        min_value=0.0,
        max_value=1.0,
        required=False,
        label="Neyman: people pass of the judge's fails",
        help_text="Your guess, a share; blank: 0.5.",
    )
    # the plan's assumptions: they shape the preview, not the campaign
    miss_rate = forms.FloatField(
        min_value=0.0,
        max_value=0.99,
        required=False,
        label="Plan: assumed miss rate",
        help_text="Share of failures the judge passes; blank: its last validation, else 0.25.",
    )
    false_fail_rate = forms.FloatField(
        min_value=0.0,
        max_value=0.99,
        initial=0.05,
        required=False,
        label="Plan: assumed false-fail rate",
        help_text="Share of passes the judge fails.",
    )
    target = forms.FloatField(
        min_value=0.001,
        max_value=1.0,
        initial=0.05,
        required=False,
        label="Plan: target on the miss rate",
        help_text="Half-width wanted: 0.05 is ± 5 points.",
    )


class HoldingForm(forms.Form):
    """What the labelling page says of itself: the items it holds (shown or waiting in its queue, comma-separated
    ids), which page it is (a browser tab), how many items it would hold ahead, and whether it takes the
    campaign over from another page. The last three are hints: a malformed one is ignored, never an error."""

    have = forms.CharField(required=False, max_length=2000)
    page = forms.CharField(required=False, max_length=200)
    ahead = forms.CharField(required=False, max_length=20)
    take_over = forms.CharField(required=False, max_length=10)

    def clean_have(self) -> list[int]:
        ids = [part.strip() for part in self.cleaned_data["have"].split(",") if part.strip()]
        if not all(part.isdigit() for part in ids):
            raise forms.ValidationError("a comma-separated list of item ids")
        return [int(part) for part in ids if 0 < int(part) < 2**63][:50]

    def clean_page(self) -> str:
        page = self.cleaned_data["page"]
        return page if re.fullmatch(r"[A-Za-z0-9_-]{8,40}", page) else ""

    def clean_ahead(self) -> int | None:
        ahead = self.cleaned_data["ahead"]
        return int(ahead) if ahead.isascii() and ahead.isdigit() and len(ahead) < 4 else None

    def clean_take_over(self) -> bool:
        return self.cleaned_data["take_over"] in ("1", "true")


class AnswerForm(HoldingForm):
    item_id = forms.IntegerField(min_value=1, max_value=2**63 - 1)
    value = forms.CharField(max_length=12, help_text="supported, unsupported, cant_tell, skip; or a score.")
    rationale = forms.CharField(required=False, max_length=5000)
    key = forms.CharField(required=False, max_length=64, help_text="The answer's idempotency key.")
    seconds = forms.FloatField(required=False, min_value=0, help_text="How long the item was on screen.")


class ChangeLabelForm(forms.Form):
    value = forms.CharField(max_length=12, help_text="supported, unsupported, cant_tell; or a score.")
    rationale = forms.CharField(required=False, max_length=5000)


class AdjudicationForm(forms.Form):
    item_id = forms.IntegerField(min_value=1, max_value=2**63 - 1)
    value = forms.ChoiceField(choices=[("supported", "Supported"), ("unsupported", "Unsupported")], required=False)
    score = forms.IntegerField(required=False, min_value=-1000, max_value=1000, help_text="Ordinal campaigns.")
    note = forms.CharField(required=False, max_length=2000)


class GuidelineForm(forms.Form):
    text = forms.CharField(
        required=False,
        max_length=20000,
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text="Annotators see it from now on; labels record the version; a certificate measured under an "
        "older version reads stale.",
    )


class LabelImportForm(forms.Form):
    file = forms.FileField(
        help_text="CSV, JSON Lines or a JSON array: question_id, claim_index (claim campaigns), label, annotator, "
        "rationale; or a Label Studio, Argilla or Langfuse scores export."
    )
    format = forms.ChoiceField(
        choices=[("", "from the file's extension and content")] + [(f, f) for f in LABEL_FORMATS], required=False
    )
    label_field = forms.CharField(
        required=False, max_length=200, help_text="The label's control tag, Argilla question or Langfuse score name."
    )
    value_map = forms.CharField(
        required=False,
        max_length=2000,
        help_text="The export's values as ours, e.g. Supported=supported,Not supported=unsupported.",
    )
    users = forms.FileField(required=False, help_text="Users table (id and username or email), to name user ids.")
    match = forms.ChoiceField(
        choices=[("auto", "by id, else by text"), ("id", "by question id"), ("text", "by question text")],
        required=False,
        initial="auto",
    )
    id_field = forms.CharField(required=False, max_length=200, help_text="The field holding the question id.")

    def clean_value_map(self) -> dict[str, str]:
        text = self.cleaned_data["value_map"]
        pairs = [part.split("=", 1) for part in text.split(",") if part.strip()]
        if any(len(pair) != 2 or not pair[0].strip() for pair in pairs):
            raise forms.ValidationError("a value map is THEIRS=ours pairs separated by commas")
        return {theirs.strip(): ours.strip() for theirs, ours in pairs}


class AnnotatorsForm(forms.Form):
    annotators = forms.ModelMultipleChoiceField(
        queryset=get_user_model().objects.filter(is_active=True).order_by("username")
    )


class RemoveAnnotatorForm(forms.Form):
    remove = forms.CharField(max_length=150)


class ThresholdForm(forms.Form):
    fit_kappa = forms.FloatField(min_value=-1.0, max_value=1.0, label="Kappa at least")
    fit_miss_rate = forms.FloatField(min_value=0.0, max_value=1.0, label="Miss rate at most")


class ExportForm(forms.Form):
    format = forms.ChoiceField(choices=[(f, f) for f in DISAGREEMENT_FORMATS], initial="jsonl")
    limit = forms.IntegerField(min_value=1, required=False)
    balanced = forms.BooleanField(required=False, help_text="As many false passes as false fails.")
    seed = forms.IntegerField(min_value=0, initial=7)


class VerdictImportForm(forms.Form):
    file = forms.FileField(
        help_text="CSV or JSON Lines: question_id, claim_index (claim campaigns), supported, rationale."
    )
    judge_config = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}), help_text="JSON: model, model_version, prompt, temperature, ..."
    )

    def clean_judge_config(self) -> dict:
        data = json_object_field(self.cleaned_data["judge_config"], "judge config")
        if data is None:
            raise forms.ValidationError("the judge config is required: a JSON object")
        return data


class FreshHeldoutForm(forms.Form):
    name = forms.CharField(max_length=100, validators=[valid_name])
    size = forms.IntegerField(min_value=1, initial=200)


class TryPromptForm(forms.Form):
    base_config = forms.ModelChoiceField(
        queryset=JudgeConfig.objects.exclude(endpoint_kind="").order_by("name"),
        label="Start from",
        help_text="A runnable judge config: the tuned one is it with your prompt and examples.",
    )
    export = forms.ChoiceField(
        required=False, label="Few-shot examples", help_text="A disagreement export (tuning split only)."
    )
    prompt = forms.CharField(
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 6, "class": "mono"}),
        label="Verdict prompt",
        help_text="Fields: {question} {context} {answer} {claim}. Empty: the starting config's.",
    )
    name = forms.SlugField(max_length=100, label="New config name")
    claims = forms.ChoiceField(
        choices=[("keep", "keep each answer's claims"), ("split", "split answers into claims")], initial="keep"
    )

    def __init__(self, *args, exports=(), **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.fields["export"].choices = [("", "none")] + [
            (f"{e.campaign.name}@{e.version}", f"{e.campaign.name} v{e.version} ({len(e.item_ids)} examples, {e.fmt})")
            for e in exports
        ]

    def clean_export(self) -> tuple[str, int] | None:
        value = self.cleaned_data["export"]
        if not value:
            return None
        campaign, _, version = value.rpartition("@")
        return campaign, int(version)

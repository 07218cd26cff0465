"""Forms for the upload and compare pages: they validate input and say what is wrong, per field."""

from __future__ import annotations

import math

from django import forms
from django.core.validators import RegexValidator

from .models import Comparison, JudgeConfig, Run
from .services.fields import FieldError, parse_json_object
from .services.names import NAME_RULE
from .services.readers import FORMATS
from .services.trec import TIE_ORDERS

#: The naming rule (:mod:`.services.names`) in words a person can act on, for every name typed in a form.
valid_name = RegexValidator(
    r"^[-a-zA-Z0-9_]+\Z", f"Use only {NAME_RULE}, without spaces (for example support-qa or chunks-256)."
)

FORMAT_CHOICES = [("", "from the file extension and content")] + [(f, f) for f in FORMATS]


class EvalSetImportForm(forms.Form):
    file = forms.FileField(
        help_text="JSON Lines or a JSON array, CSV, Parquet, a Ragas table, DeepEval goldens, Langfuse dataset "
        "items, LangSmith examples or TREC qrels."
    )
    name = forms.CharField(max_length=100, validators=[valid_name], help_text="New or existing eval set name.")
    format = forms.ChoiceField(choices=FORMAT_CHOICES, required=False)
    extend = forms.BooleanField(
        required=False, help_text="Add these questions to the latest version instead of replacing them."
    )
    topics = forms.FileField(
        required=False, help_text="TREC qrels: the topics' text ('qid<TAB>text' lines or an SGML topics file)."
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
    file = forms.FileField(
        help_text="JSON Lines or a JSON array, CSV, Parquet, a Ragas table, DeepEval results or a TREC run."
    )
    evalset = forms.CharField(
        max_length=120,
        label="Eval set",
        help_text="NAME (its latest version) or NAME@VERSION, for example support-qa@2.",
    )
    name = forms.CharField(max_length=150, validators=[valid_name], help_text="A name for this run.")
    format = forms.ChoiceField(choices=FORMAT_CHOICES, required=False)
    k = forms.IntegerField(
        min_value=1,
        required=False,
        label="k",
        help_text="Chunks that reach the model; default: the most context_ids in a row.",
    )
    cutoffs = forms.CharField(
        required=False,
        label="Cut-offs",
        help_text="Further cut-offs, e.g. 5,10,100: recall, precision, nDCG and rr at each.",
    )
    gain = forms.ChoiceField(
        choices=[
            ("", "default (g for a TREC run, as trec_eval; else 2^g − 1)"),
            ("exponential", "2^g − 1"),
            ("linear", "g"),
        ],
        required=False,
    )
    ties = forms.ChoiceField(
        choices=[(t, t) for t in TIE_ORDERS],
        initial="docno-desc",
        required=False,
        help_text="TREC runs: order of equal scores.",
    )
    missing_topics = forms.ChoiceField(
        choices=[("skip", "skip and count (trec_eval)"), ("fail", "refuse the file")],
        initial="skip",
        required=False,
        help_text="TREC runs: run topics the eval set lacks.",
    )
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

    def clean_cutoffs(self) -> list[int]:
        text = self.cleaned_data["cutoffs"].replace(" ", "")
        try:
            values = [int(part) for part in text.split(",") if part]
        except ValueError:
            raise forms.ValidationError("cut-offs are positive integers separated by commas, e.g. 5,10,100") from None
        if any(v < 1 for v in values):
            raise forms.ValidationError("cut-offs are positive integers separated by commas, e.g. 5,10,100")
        return values


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
    correction = forms.ChoiceField(
        choices=[
            ("", "the default (GATE_CORRECTION)"),
            ("holm", "holm: a block is corrected for the number of metrics and slices (Holm's step-down)"),
            ("none", "none: each metric and slice blocks at 2.5 % alone (a harmless change blocks most reports)"),
        ],
        required=False,
        label="Correction of 'block'",
    )
    judge_correction = forms.ChoiceField(
        choices=[
            ("none", "none: judge metrics on the judge's raw difference"),
            (
                "ppi",
                "ppi: judge metrics on the prediction-powered difference where people labelled both runs' rows "
                "(the raw difference, said so, where they did not)",
            ),
        ],
        required=False,
        initial="none",
        label="Judge correction",
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


class ChangedRowsForm(forms.Form):
    """Which changed rows of a comparison to list: a metric, a direction and a page."""

    metric = forms.CharField(required=False, max_length=100)
    direction = forms.ChoiceField(
        required=False, choices=[("all", "both"), ("down", "drops"), ("up", "rises")], initial="all"
    )
    page = forms.IntegerField(required=False, min_value=1)


class JudgeConfigForm(forms.Form):
    config = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 14, "class": "mono"}),
        label="Judge config (JSON)",
        help_text="name, endpoint_kind, base_url, api_key_env (the variable's NAME, never the key), model, prompt, "
        "claim_prompt, temperature, seed, max_tokens, few_shot, limits, price. See the README.",
    )
    file = forms.FileField(required=False, help_text="... or a JSON file.")

    def clean(self) -> dict:
        data = super().clean()
        upload = data.get("file")
        text = upload.read().decode("utf-8", errors="replace") if upload else data.get("config", "")
        if not text.strip():
            raise forms.ValidationError("paste the config's JSON or choose a file")
        data["raw"] = json_object_field(text, "judge config")
        return data


class JudgeRunForm(forms.Form):
    judge_config = forms.ModelChoiceField(
        queryset=None, label="Judge config", help_text="A runnable config (it names an endpoint kind)."
    )
    claims = forms.ChoiceField(
        choices=[("keep", "keep the row's claims"), ("split", "split each answer into claims first")], initial="keep"
    )
    name = forms.CharField(
        max_length=150,
        required=False,
        validators=[valid_name],
        help_text="The new run's name (default RUN-by-CONFIG).",
    )

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.fields["judge_config"].queryset = JudgeConfig.objects.exclude(endpoint_kind="").order_by("name")


class RescoreForm(forms.Form):
    base = forms.ModelChoiceField(queryset=Run.objects.all())
    candidate = forms.ModelChoiceField(queryset=Run.objects.all())
    comparison = forms.ModelChoiceField(queryset=None, required=False)
    claims = forms.ChoiceField(choices=[("keep", "keep"), ("split", "split")], initial="keep")

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.fields["comparison"].queryset = Comparison.objects.all()


class PlanLabelsForm(forms.Form):
    """The planner's labels question, with no data yet: every assumption typed in (shares from 0 to 1)."""

    size = forms.IntegerField(min_value=1, initial=240, help_text="Items to label.")
    failure_share = forms.FloatField(
        min_value=0.001,
        max_value=0.999,
        initial=0.15,
        label="Share people would fail",
        help_text="The failure class (unsupported): 0.15 is 15 % of items.",
    )
    miss_rate = forms.FloatField(
        min_value=0.0, max_value=0.99, initial=0.25, label="Assumed miss rate", help_text="Failures the judge passes."
    )
    false_fail_rate = forms.FloatField(
        min_value=0.0,
        max_value=0.99,
        initial=0.05,
        label="Assumed false-fail rate",
        help_text="Passes the judge fails.",
    )
    population = forms.IntegerField(
        min_value=1, required=False, label="Items in the run", help_text="Blank: a large run."
    )
    heldout_fraction = forms.FloatField(min_value=0.0, max_value=1.0, initial=0.3, label="Held-out fraction")
    overlap = forms.IntegerField(min_value=1, max_value=20, initial=1, help_text="Different annotators per item.")
    target = forms.FloatField(
        min_value=0.001, max_value=1.0, initial=0.05, label="Target half-width", help_text="0.05 is ± 5 points."
    )
    statistic = forms.ChoiceField(
        choices=[
            ("miss_rate", "miss rate"),
            ("false_fail_rate", "false-fail rate"),
            ("kappa", "kappa"),
            ("corrected_pass_rate", "corrected pass rate"),
        ],
        initial="miss_rate",
        label="Target on",
    )


class PlanQuestionsForm(forms.Form):
    """The planner's questions question: a paired comparison's assumptions."""

    kind = forms.ChoiceField(
        choices=[("pass_fail", "pass/fail (0 or 1 per question)"), ("graded", "graded (recall, nDCG, faithfulness)")],
        initial="pass_fail",
        label="Metric kind",
    )
    change = forms.FloatField(
        initial=0.0, min_value=-1.0, max_value=1.0, help_text="The true change to settle (candidate − baseline)."
    )
    margin = forms.FloatField(initial=0.02, min_value=0.0, max_value=1.0, help_text="The largest tolerated drop.")
    discordance = forms.FloatField(
        required=False,
        initial=0.10,
        min_value=0.0001,
        max_value=1.0,
        label="Share of questions that flip",
        help_text="Pass/fail metrics: 0.10 is 10 % of questions pass in one run and fail in the other.",
    )
    sd = forms.FloatField(
        required=False,
        initial=0.3,
        min_value=0.0001,
        max_value=2.0,
        label="SD of per-question differences",
        help_text="Graded metrics.",
    )
    power = forms.FloatField(initial=0.8, min_value=0.5, max_value=0.999)
    available = forms.IntegerField(
        required=False, min_value=1, label="Questions in the eval set", help_text="To see what they can do."
    )

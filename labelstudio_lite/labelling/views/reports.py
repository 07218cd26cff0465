"""The judge error report, re-measurement on held-out labels, and disagreement exports (eval owners)."""

from __future__ import annotations

import json

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evalcore.charts import confusion_heatmap_svg, slice_intervals_svg
from evalcore.services.problems import UserFacingError
from labelstudio_lite.accounts.access import eval_owner_required

from ..access import campaign_for_owner, verdict_set_for
from ..jobs import VerdictImportParams, request_verdicts_import
from ..selectors import campaign_exports, disagreement_export, verdict_sets_of
from ..services.campaigns import campaign_fresh_heldout, campaign_set_thresholds
from ..services.exports import DISAGREEMENT_FORMATS, disagreements_export
from ..services.judge_report import judge_report
from ..services.remeasure import remeasure
from .uploads import import_upload


class ThresholdForm(forms.Form):
    fit_kappa = forms.FloatField(min_value=-1.0, max_value=1.0, label="Kappa at least")
    fit_miss_rate = forms.FloatField(min_value=0.0, max_value=1.0, label="Miss rate at most")


class ExportForm(forms.Form):
    format = forms.ChoiceField(choices=[(f, f) for f in DISAGREEMENT_FORMATS], initial="jsonl")
    limit = forms.IntegerField(min_value=1, required=False)
    balanced = forms.BooleanField(required=False, help_text="As many false passes as false fails.")
    seed = forms.IntegerField(min_value=0, initial=7)


class VerdictImportForm(forms.Form):
    file = forms.FileField(help_text="CSV or JSON Lines: question_id, claim_index (claim campaigns), supported, rationale.")
    judge_config = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), help_text="JSON: model, model_version, prompt, temperature, ...")

    def clean_judge_config(self) -> dict:
        try:
            data = json.loads(self.cleaned_data["judge_config"])
        except json.JSONDecodeError as error:
            raise forms.ValidationError(f"malformed JSON, line {error.lineno}: {error.msg}") from None
        if not isinstance(data, dict):
            raise forms.ValidationError("the judge config must be a JSON object")
        return data


class FreshHeldoutForm(forms.Form):
    name = forms.SlugField(max_length=100)
    size = forms.IntegerField(min_value=1, initial=200)


@require_http_methods(["GET", "POST"])
@eval_owner_required
def report_page(request: HttpRequest, name: str) -> HttpResponse:
    campaign = campaign_for_owner(request.user, name)
    if request.method == "POST":
        form = ThresholdForm(request.POST)
        if not form.is_valid():
            messages.error(request, "Thresholds: kappa between -1 and 1, miss rate between 0 and 1.")
        else:
            try:
                campaign_set_thresholds(campaign=campaign, **form.cleaned_data)
            except UserFacingError as error:
                messages.error(request, f"Thresholds: {error}")
            else:
                messages.success(request, "Thresholds saved.")
        return redirect(reverse("labelling:report", args=[campaign.name]))
    verdict_set = verdict_set_for(campaign, request.GET.get("verdicts"))
    report = judge_report(campaign, verdict_set=verdict_set)
    context = {
        "campaign": campaign, "report": report, "verdict_set": verdict_set,
        "verdict_sets": verdict_sets_of(campaign),
        "heatmap": confusion_heatmap_svg(report.overall.confusion.as_dict()) if report.overall.n else "",
        "slice_plot": slice_intervals_svg([s.as_dict() for s in report.slices]) if report.slices else "",
        "threshold_form": ThresholdForm(initial={"fit_kappa": campaign.fit_kappa, "fit_miss_rate": campaign.fit_miss_rate}),
        "export_form": ExportForm(), "verdict_form": VerdictImportForm(), "fresh_form": FreshHeldoutForm(initial={"name": f"{campaign.name}-fresh"}),
        "exports": campaign_exports(campaign),
    }
    return render(request, "labelling/report.html", context)


@require_GET
@eval_owner_required
def remeasure_page(request: HttpRequest, name: str) -> HttpResponse:
    campaign = campaign_for_owner(request.user, name)
    verdict_set = verdict_set_for(campaign, request.GET.get("verdicts"))
    if verdict_set is None:
        raise Http404("Choose the verdicts of a new judge config to re-measure.")
    try:
        result = remeasure(campaign=campaign, verdict_set=verdict_set, split=request.GET.get("split", "heldout"), viewer=request.user)
    except UserFacingError as error:
        return render(request, "labelling/remeasure.html", {"campaign": campaign, "verdict_set": verdict_set, "refused": str(error)}, status=400)
    return render(request, "labelling/remeasure.html", {"campaign": campaign, "verdict_set": verdict_set, "result": result})


@require_POST
@eval_owner_required
def export_create(request: HttpRequest, name: str) -> HttpResponse:
    campaign = campaign_for_owner(request.user, name)
    form = ExportForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose a format; the limit must be a positive number.")
        return redirect(reverse("labelling:report", args=[campaign.name]))
    data = form.cleaned_data
    try:
        record = disagreements_export(campaign=campaign, fmt=data["format"], limit=data["limit"], balanced=data["balanced"],
                                      seed=data["seed"], verdict_set=verdict_set_for(campaign, request.GET.get("verdicts")), user=request.user)
    except UserFacingError as error:
        messages.error(request, str(error))
        return redirect(reverse("labelling:report", args=[campaign.name]))
    messages.success(request, f"Export v{record.version}: {len(record.item_ids)} examples from the tuning split.")
    return redirect(reverse("labelling:report", args=[campaign.name]) + "#exports")


@require_GET
@eval_owner_required
def export_download(request: HttpRequest, name: str, version: int) -> HttpResponse:
    campaign = campaign_for_owner(request.user, name)
    record = disagreement_export(campaign, version)
    if record is None:
        raise Http404("No such export.")
    extension = "csv" if record.fmt == "csv" else "jsonl"
    response = HttpResponse(record.content, content_type="text/csv" if record.fmt == "csv" else "application/x-ndjson")
    response["Content-Disposition"] = f'attachment; filename="{campaign.name}-disagreements-v{record.version}-{record.fmt}.{extension}"'
    return response


@require_POST
@eval_owner_required
def verdicts_upload(request: HttpRequest, name: str) -> HttpResponse:
    campaign = campaign_for_owner(request.user, name)
    return import_upload(
        request, form=VerdictImportForm(request.POST, request.FILES), back=reverse("labelling:report", args=[campaign.name]),
        invalid=lambda form: "Verdicts: " + "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()),
        start=lambda path, display_name, data: request_verdicts_import(
            params=VerdictImportParams(campaign=campaign.name, path=path, display_name=display_name, judge_config=data["judge_config"]),
            user=request.user,
        ),
    )


@require_POST
@eval_owner_required
def fresh_heldout(request: HttpRequest, name: str) -> HttpResponse:
    campaign = campaign_for_owner(request.user, name)
    form = FreshHeldoutForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Give the new campaign a name (letters, digits, - and _) and a size.")
        return redirect(reverse("labelling:report", args=[campaign.name]))
    try:
        new = campaign_fresh_heldout(campaign=campaign, name=form.cleaned_data["name"], size=form.cleaned_data["size"], user=request.user)
    except UserFacingError as error:
        messages.error(request, str(error))
        return redirect(reverse("labelling:report", args=[campaign.name]))
    messages.success(request, f"Sampled a fresh held-out set: campaign {new.name} with {new.items.count()} items, none seen before.")
    return redirect(reverse("labelling:campaign", args=[new.name]))

"""The judge error report and its portable copy, re-measurement on held-out labels, and disagreement exports
(eval owners)."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evalcore.charts import confusion_heatmap_svg, responsive, slice_intervals_svg
from evalcore.jobs.labelling_kinds import (
    IMPORT_VERDICTS,
    TryPromptParams,
    VerdictImportParams,
    request_try_prompt,
    request_verdicts_import,
)
from evalcore.services.problems import UserFacingError
from evalcore.views.jobs import register_job_form, retried_job, values_of
from labelstudio_lite.accounts.access import eval_owner_required

from ..access import campaign_for_owner, verdict_set_for
from ..bias_selectors import campaign_batteries
from ..forms import ExportForm, FreshHeldoutForm, ThresholdForm, TryPromptForm, VerdictImportForm
from ..models import Campaign
from ..selectors import campaign_export, campaign_exports, remeasurement_opened, verdict_sets_of
from ..services.campaigns import campaign_fresh_heldout, campaign_set_thresholds
from ..services.exports import disagreements_export
from ..services.judge_report import judge_report
from ..services.published_report import PUBLISH_FORMATS, judge_report_publish
from ..services.remeasure import remeasure, remeasurement_open
from ..services.tuned_prompt import few_shot_exports
from .actions import Done, form_post, import_upload
from .downloads import EXTENSIONS, attachment

register_job_form(IMPORT_VERDICTS, lambda job: reverse("labelling:report", args=[job.params["campaign"]]) + "#verdicts")


def _slice_plot(slices: list[dict], failure: str) -> str:
    return responsive(
        slice_intervals_svg(slices, failure=failure), slice_intervals_svg(slices, compact=True, failure=failure)
    )


def _report(
    request: HttpRequest, campaign: Campaign, *, verdict_form: VerdictImportForm | None = None, status: int = 200
) -> HttpResponse:
    """The judge report page; ``verdict_form`` is a refused verdict upload, shown again with its values."""
    verdict_set = verdict_set_for(campaign, request.GET.get("verdicts"))
    report = judge_report(campaign, verdict_set=verdict_set)
    retry = retried_job(request, IMPORT_VERDICTS)
    context = {
        "campaign": campaign,
        "report": report,
        "verdict_set": verdict_set,
        "verdict_sets": verdict_sets_of(campaign),
        "heatmap": (
            confusion_heatmap_svg(
                report.overall.confusion.as_dict(), classes=(campaign.pass_word.lower(), campaign.fail_word.lower())
            )
            if report.overall.n
            else ""
        ),
        "slice_plot": _slice_plot([s.as_dict() for s in report.slices], report.failure) if report.slices else "",
        "threshold_form": ThresholdForm(
            initial={"fit_kappa": campaign.fit_kappa, "fit_miss_rate": campaign.fit_miss_rate}
        ),
        "export_form": ExportForm(),
        "verdict_form": verdict_form or VerdictImportForm(initial=values_of(retry, VerdictImportForm)),
        "retry": retry,
        "fresh_form": FreshHeldoutForm(initial={"name": f"{campaign.name}-fresh"}),
        "exports": campaign_exports(campaign),
        "try_form": _try_form(campaign),
        "bias": campaign_batteries(campaign).first(),
    }
    return render(request, "labelling/report.html", context, status=status)


@require_http_methods(["GET", "POST"])
@eval_owner_required
def report_page(request: HttpRequest, name: str) -> HttpResponse:
    campaign = campaign_for_owner(request.user, name)
    if request.method == "POST":

        def save(data: dict) -> Done:
            campaign_set_thresholds(campaign=campaign, fit_kappa=data["fit_kappa"], fit_miss_rate=data["fit_miss_rate"])
            return Done("Thresholds saved.")

        return form_post(
            request,
            ThresholdForm(request.POST),
            back=reverse("labelling:report", args=[campaign.name]),
            invalid="Thresholds: kappa between -1 and 1, miss rate between 0 and 1.",
            run=save,
        )
    return _report(request, campaign)


def _try_form(campaign, data=None) -> TryPromptForm:  # type: ignore[no-untyped-def]
    judge = campaign.run.judge_config
    base = judge if judge is not None and judge.runnable else None
    initial = {
        "base_config": base,
        "prompt": base.prompt if base else "",
        "name": f"{base.label}-tuned" if base else "",
    }
    return TryPromptForm(data, exports=few_shot_exports(campaign), initial=initial)


@require_POST
@eval_owner_required
def try_prompt(request: HttpRequest, name: str) -> HttpResponse:
    campaign = campaign_for_owner(request.user, name)

    def start(data: dict) -> Done:
        export = data["export"]
        params = TryPromptParams(
            campaign=campaign.name,
            base_config=data["base_config"].pk,
            name=data["name"],
            export=export[1] if export else None,
            export_campaign=export[0] if export else None,
            prompt=data["prompt"] or None,
            claims=data["claims"],
        )
        job = request_try_prompt(params=params, user=request.user)
        return Done(to=reverse("evalcore:job", args=[job.pk]))

    return form_post(
        request,
        _try_form(campaign, request.POST),
        back=reverse("labelling:report", args=[campaign.name]) + "#try-prompt",
        invalid=lambda form: "Try a tuned prompt: " + "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()),
        run=start,
    )


@require_http_methods(["GET", "POST"])
@eval_owner_required
def remeasure_page(request: HttpRequest, name: str) -> HttpResponse:
    """GET shows the re-measurement once it was opened (or asks to open it); POST opens it, which can spend the held-out split."""
    campaign = campaign_for_owner(request.user, name)
    verdict_set = verdict_set_for(campaign, request.GET.get("verdicts"))
    if verdict_set is None:
        raise Http404("Choose the verdicts of a new judge config to re-measure.")
    context = {"campaign": campaign, "verdict_set": verdict_set}
    try:
        if request.method == "POST":
            remeasurement_open(campaign=campaign, verdict_set=verdict_set, user=request.user)
            return redirect(request.get_full_path())
        result = remeasure(campaign=campaign, verdict_set=verdict_set, split=request.GET.get("split", "heldout"))
    except UserFacingError as error:
        return render(request, "labelling/remeasure.html", {**context, "refused": str(error)}, status=400)
    if not remeasurement_opened(verdict_set):
        return render(request, "labelling/remeasure.html", {**context, "confirm": True})
    return render(request, "labelling/remeasure.html", {**context, "result": result})


@require_POST
@eval_owner_required
def export_create(request: HttpRequest, name: str) -> HttpResponse:
    campaign = campaign_for_owner(request.user, name)
    verdict_set = verdict_set_for(campaign, request.GET.get("verdicts"))
    back = reverse("labelling:report", args=[campaign.name])

    def export(data: dict) -> Done:
        record = disagreements_export(
            campaign=campaign,
            fmt=data["format"],
            limit=data["limit"],
            balanced=data["balanced"],
            seed=data["seed"],
            verdict_set=verdict_set,
            user=request.user,
        )
        return Done(
            f"Export v{record.version}: {len(record.item_ids)} examples from the tuning split.", back + "#exports"
        )

    return form_post(
        request,
        ExportForm(request.POST),
        back=back,
        invalid="Choose a format; the limit must be a positive number.",
        run=export,
    )


@require_POST
@eval_owner_required
def report_publish(request: HttpRequest, name: str, fmt: str) -> HttpResponse:
    """Record the portable report (a POST: it holds every label, held-out ones too), then download it with a GET."""
    campaign = campaign_for_owner(request.user, name)
    if fmt not in PUBLISH_FORMATS:
        raise Http404("The report is published as .html or .json")
    verdict_set = verdict_set_for(campaign, request.GET.get("verdicts"))
    record = judge_report_publish(campaign=campaign, fmt=fmt, verdict_set=verdict_set, user=request.user)
    return redirect(reverse("labelling:export-download", args=[campaign.name, record.version]))


@require_GET
@eval_owner_required
def export_download(request: HttpRequest, name: str, version: int) -> HttpResponse:
    campaign = campaign_for_owner(request.user, name)
    record = campaign_export(campaign, version)
    if record is None:
        raise Http404("No such export.")
    extension = EXTENSIONS.get(record.fmt, "jsonl")
    return attachment(
        record.content,
        fmt=record.fmt,
        filename=f"{campaign.name}-{record.kind}-v{record.version}-{record.fmt}.{extension}",
    )


@require_POST
@eval_owner_required
def verdicts_upload(request: HttpRequest, name: str) -> HttpResponse:
    campaign = campaign_for_owner(request.user, name)
    form = VerdictImportForm(request.POST, request.FILES)
    if not form.is_valid():  # back to the report with the form as sent: its judge config is not lost
        return _report(request, campaign, verdict_form=form, status=400)
    return import_upload(
        request,
        form=form,
        back=reverse("labelling:report", args=[campaign.name]),
        invalid=lambda form: "Verdicts: " + "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()),
        start=lambda path, display_name, data: request_verdicts_import(
            params=VerdictImportParams(
                campaign=campaign.name, path=path, display_name=display_name, judge_config=data["judge_config"]
            ),
            user=request.user,
        ),
    )


@require_POST
@eval_owner_required
def fresh_heldout(request: HttpRequest, name: str) -> HttpResponse:
    campaign = campaign_for_owner(request.user, name)

    def sample(data: dict) -> Done:
        new = campaign_fresh_heldout(campaign=campaign, name=data["name"], size=data["size"], user=request.user)
        return Done(
            f"Sampled a fresh held-out set: campaign {new.name} with {new.items.count()} items, none seen before.",
            reverse("labelling:campaign", args=[new.name]),
        )

    return form_post(
        request,
        FreshHeldoutForm(request.POST),
        back=reverse("labelling:report", args=[campaign.name]),
        invalid="Give the new campaign a name (letters, digits, - and _) and a size.",
        run=sample,
    )

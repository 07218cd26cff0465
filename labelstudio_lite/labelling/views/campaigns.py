"""Campaign pages for eval owners: create (with a strata preview), overview, adjudication, import, export."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evalcore.jobs.labelling_kinds import IMPORT_LABELS, LabelImportParams, request_labels_import
from evalcore.models import Run
from evalcore.services.problems import UserFacingError
from evalcore.services.uploads import save_upload
from evalcore.views.jobs import register_job_form, retried_job
from labelstudio_lite.accounts.access import eval_owner_required

from ..access import campaign_for_owner
from ..forms import (
    AdjudicationForm,
    AnnotatorsForm,
    CampaignForm,
    GuidelineForm,
    LabelImportForm,
    RemoveAnnotatorForm,
)
from ..selectors import (
    FinalStatus,
    annotator_agreement,
    campaign_progress,
    campaigns_list,
    disagreements,
    final_label_counts,
)
from ..services.adjudication import adjudicate
from ..services.campaigns import (
    allocation_options,
    campaign_create,
    campaign_new_guideline,
    campaign_remove_annotator,
    campaign_set_annotators,
    plan_assumptions,
    plan_campaign,
)
from ..services.exports import LABEL_FORMATS, labels_export
from ..services.label_formats import label_studio_config
from ..services.label_sets import LabelSet, label_set
from .actions import Done, form_post, import_upload

register_job_form(IMPORT_LABELS, lambda job: reverse("labelling:campaign", args=[job.params["campaign"]]) + "#import")


def _labels(data: dict) -> LabelSet:
    """The form's metric and label set (the scale's fields only count on an ordinal scale)."""
    ordinal = data.get("scale") == "ordinal"
    return label_set(
        metric=data.get("metric") or "faithfulness",
        scale=data.get("scale") or "binary",
        scale_min=data.get("scale_min") if ordinal else None,
        scale_max=data.get("scale_max") if ordinal else None,
        fail_at=data.get("fail_at") if ordinal else None,
    )


@require_http_methods(["GET", "POST"])
@eval_owner_required
def campaign_list(request: HttpRequest) -> HttpResponse:
    run = request.GET.get("run", "")  # the home page's "validate this judge" link names the run
    form = CampaignForm(request.POST or None, initial={"run": int(run)} if run.isdigit() else None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            labels = _labels(data)
            campaign = campaign_create(
                labels=labels,
                run=data["run"],
                name=data["name"],
                unit=data["unit"],
                size=data["size"],
                heldout_fraction=data["heldout_fraction"],
                overlap=data["overlap"],
                seed=data["seed"],
                judge_question=data["judge_question"] or None,
                guidance=data["guidance"],
                annotators=data["annotators"],
                user=request.user,
                **allocation_options(data),
            )
        except UserFacingError as error:
            form.add_error(error.field if error.field in form.fields else None, str(error))
        else:
            messages.success(request, f"Created campaign {campaign.name} with {campaign.items.count()} items.")
            return redirect(reverse("labelling:campaign", args=[campaign.name]))
    status = 400 if request.method == "POST" else 200
    context = {
        "form": form,
        "campaigns": campaigns_list(),
        "judged_runs": Run.objects.filter(judge_config__isnull=False).exists(),
    }
    return render(request, "labelling/campaigns.html", context, status=status)


@require_POST
@eval_owner_required
def campaign_preview(request: HttpRequest) -> HttpResponse:
    """The strata a campaign with these settings would sample and what it will measure, before creating it."""
    form = CampaignForm(request.POST)
    form.is_valid()
    data = form.cleaned_data
    plan = error = None
    if all(k in data for k in ("run", "unit", "size", "seed", "heldout_fraction", "overlap")):
        try:
            plan = plan_campaign(
                run=data["run"],
                unit=data["unit"],
                size=data["size"],
                seed=data["seed"],
                heldout_fraction=data["heldout_fraction"],
                overlap=data["overlap"],
                labels=_labels(data),
                **plan_assumptions(data),
                **allocation_options(data),
            )
        except UserFacingError as exc:
            error = str(exc)
    else:
        error = "Choose a run, a unit and a size to see the strata."
    return render(request, "labelling/campaigns.html#preview", {"plan": plan, "preview_error": error})


@require_GET
@eval_owner_required
def campaign_overview(request: HttpRequest, name: str) -> HttpResponse:
    campaign = campaign_for_owner(request.user, name)
    statuses = final_label_counts(campaign)
    context = {
        "campaign": campaign,
        "progress": campaign_progress(campaign),
        "agreement": annotator_agreement(campaign),
        "statuses": statuses,
        "conflicts": statuses.get(FinalStatus.CONFLICT, 0),
        "annotators_form": AnnotatorsForm(),
        "import_form": LabelImportForm(),
        "retry": retried_job(request, IMPORT_LABELS),
        "label_studio_config": label_studio_config(campaign),
        "guideline_form": GuidelineForm(initial={"text": campaign.guideline.text if campaign.guideline else ""}),
        "guidelines": campaign.guidelines.select_related("created_by").order_by("-version"),
    }
    return render(request, "labelling/campaign.html", context)


@require_POST
@eval_owner_required
def campaign_guideline(request: HttpRequest, name: str) -> HttpResponse:
    """Write the guideline's next version (eval owners; annotators get a 404 like every owner page)."""
    campaign = campaign_for_owner(request.user, name)

    def write(data: dict) -> Done:
        guideline = campaign_new_guideline(campaign=campaign, text=data["text"], user=request.user)
        return Done(
            f"Guideline v{guideline.version} saved: annotators see it from now on, and a certificate measured "
            f"under an older version reads stale."
        )

    return form_post(
        request,
        GuidelineForm(request.POST),
        back=reverse("labelling:campaign", args=[campaign.name]) + "#guideline",
        invalid="The guideline: at most 20,000 characters.",
        run=write,
    )


@require_POST
@eval_owner_required
def campaign_annotators(request: HttpRequest, name: str) -> HttpResponse:
    campaign = campaign_for_owner(request.user, name)
    back = reverse("labelling:campaign", args=[campaign.name])

    def remove(data: dict) -> Done:
        user = campaign_remove_annotator(campaign=campaign, user=data["remove"])
        return Done(f"Removed {user.username}; their labels stay.")

    def add(data: dict) -> Done:
        campaign_set_annotators(campaign=campaign, users=data["annotators"])
        return Done("Annotators added.")

    if request.POST.get("remove"):
        return form_post(
            request, RemoveAnnotatorForm(request.POST), back=back, invalid="Name the annotator to remove.", run=remove
        )
    return form_post(
        request, AnnotatorsForm(request.POST), back=back, invalid="Choose at least one user to add.", run=add
    )


@require_http_methods(["GET", "POST"])
@eval_owner_required
def adjudication(request: HttpRequest, name: str) -> HttpResponse:
    """Items whose annotators disagree: set the final label (the judge's verdict is not shown here either)."""
    campaign = campaign_for_owner(request.user, name)
    if request.method == "POST":

        def decide(data: dict) -> Done:
            adjudicate(
                campaign=campaign,
                item_id=data["item_id"],
                value=data["value"],
                score=data["score"],
                note=data["note"],
                user=request.user,
            )
            return Done("Final label saved.")

        return form_post(
            request,
            AdjudicationForm(request.POST),
            back=reverse("labelling:adjudicate", args=[campaign.name]),
            invalid="Pick the final score." if campaign.ordinal else "Pick supported or unsupported.",
            run=decide,
        )
    entries = disagreements(campaign)
    unresolved = sum(1 for e in entries if e.final and e.final.needs_decision)
    return render(
        request, "labelling/adjudicate.html", {"campaign": campaign, "entries": entries, "unresolved": unresolved}
    )


@require_POST
@eval_owner_required
def export(request: HttpRequest, name: str, fmt: str) -> HttpResponse:
    """Record a label export (a POST: it changes what the judge report says), then download it with a GET."""
    campaign = campaign_for_owner(request.user, name)
    if fmt not in LABEL_FORMATS:
        raise Http404("Labels are exported as .csv or .jsonl")
    record = labels_export(campaign=campaign, fmt=fmt, user=request.user)
    return redirect(reverse("labelling:export-download", args=[campaign.name, record.version]))


@require_POST
@eval_owner_required
def import_labels_view(request: HttpRequest, name: str) -> HttpResponse:
    campaign = campaign_for_owner(request.user, name)
    return import_upload(
        request,
        form=LabelImportForm(request.POST, request.FILES),
        back=reverse("labelling:campaign", args=[campaign.name]),
        invalid=lambda form: "Choose a CSV or JSON Lines file of labels.",
        start=lambda path, display_name, data: request_labels_import(
            params=LabelImportParams(
                campaign=campaign.name,
                path=path,
                display_name=display_name,
                format=data["format"] or None,
                label_field=data["label_field"] or None,
                value_map=data["value_map"],
                users_path=str(save_upload(data["users"])) if data.get("users") else None,
                match=data["match"] or "auto",
                id_field=data["id_field"] or None,
            ),
            user=request.user,
        ),
    )

"""Campaign pages for eval owners: create (with a strata preview), overview, adjudication, import, export."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evalcore.services.problems import UserFacingError
from evalcore.services.uploads import save_upload
from labelstudio_lite.accounts.access import eval_owner_required

from ..access import campaign_for_owner
from ..forms import AdjudicationForm, AnnotatorsForm, CampaignForm, LabelImportForm
from ..jobs import LabelImportParams, request_labels_import
from ..models import Campaign, Label
from ..selectors import annotator_agreement, blind_item, campaign_progress, disagreement_items, final_labels
from ..services.adjudication import adjudicate
from ..services.campaigns import (
    CampaignError,
    campaign_create,
    campaign_remove_annotator,
    campaign_set_annotators,
    plan_campaign,
)
from ..services.labels_io import export_labels


@require_http_methods(["GET", "POST"])
@eval_owner_required
def campaign_list(request: HttpRequest) -> HttpResponse:
    form = CampaignForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            campaign = campaign_create(
                run=data["run"], name=data["name"], unit=data["unit"], size=data["size"],
                heldout_fraction=data["heldout_fraction"], overlap=data["overlap"], seed=data["seed"],
                judge_question=data["judge_question"] or None, guidance=data["guidance"],
                annotators=data["annotators"], user=request.user,
            )
        except CampaignError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, f"Created campaign {campaign.name} with {campaign.items.count()} items.")
            return redirect(reverse("labelling:campaign", args=[campaign.name]))
    campaigns = Campaign.objects.select_related("run__version__eval_set").order_by("-created_at")
    return render(request, "labelling/campaigns.html", {"form": form, "campaigns": campaigns}, status=400 if request.method == "POST" else 200)


@require_POST
@eval_owner_required
def campaign_preview(request: HttpRequest) -> HttpResponse:
    """The strata a campaign with these settings would sample, before creating it."""
    form = CampaignForm(request.POST)
    form.is_valid()
    data = form.cleaned_data
    plan = error = None
    if all(k in data for k in ("run", "unit", "size", "seed", "heldout_fraction")):
        try:
            plan = plan_campaign(run=data["run"], unit=data["unit"], size=data["size"], seed=data["seed"], heldout_fraction=data["heldout_fraction"])
        except CampaignError as exc:
            error = str(exc)
    else:
        error = "Choose a run, a unit and a size to see the strata."
    return render(request, "labelling/campaigns.html#preview", {"plan": plan, "preview_error": error})


@require_GET
@eval_owner_required
def campaign_overview(request: HttpRequest, name: str) -> HttpResponse:
    campaign = campaign_for_owner(request.user, name)
    finals = final_labels(campaign)
    statuses: dict[str, int] = {}
    for final in finals.values():
        statuses[final.status] = statuses.get(final.status, 0) + 1
    context = {
        "campaign": campaign,
        "progress": campaign_progress(campaign),
        "agreement": annotator_agreement(campaign),
        "statuses": statuses,
        "conflicts": statuses.get("conflict", 0),
        "annotators_form": AnnotatorsForm(),
        "import_form": LabelImportForm(),
    }
    return render(request, "labelling/campaign.html", context)


@require_POST
@eval_owner_required
def campaign_annotators(request: HttpRequest, name: str) -> HttpResponse:
    campaign = campaign_for_owner(request.user, name)
    if request.POST.get("remove"):
        from django.contrib.auth import get_user_model

        user = get_user_model().objects.filter(username=request.POST["remove"]).first()
        if user:
            campaign_remove_annotator(campaign=campaign, user=user)
            messages.success(request, f"Removed {user.username}; their labels stay.")
    else:
        form = AnnotatorsForm(request.POST)
        if form.is_valid():
            campaign_set_annotators(campaign=campaign, users=form.cleaned_data["annotators"])
            messages.success(request, "Annotators added.")
        else:
            messages.error(request, "Choose at least one user to add.")
    return redirect(reverse("labelling:campaign", args=[campaign.name]))


@require_http_methods(["GET", "POST"])
@eval_owner_required
def adjudication(request: HttpRequest, name: str) -> HttpResponse:
    """Items whose annotators disagree: set the final label (the judge's verdict is not shown here either)."""
    campaign = campaign_for_owner(request.user, name)
    if request.method == "POST":
        form = AdjudicationForm(request.POST)
        if form.is_valid():
            try:
                adjudicate(campaign=campaign, item_id=form.cleaned_data["item_id"], value=form.cleaned_data["value"],
                           note=form.cleaned_data["note"], user=request.user)
            except UserFacingError as error:
                messages.error(request, str(error))
            else:
                messages.success(request, "Final label saved.")
        else:
            messages.error(request, "Pick supported or unsupported.")
        return redirect(reverse("labelling:adjudicate", args=[campaign.name]))
    finals = final_labels(campaign)
    entries = []
    for item in disagreement_items(campaign):
        labels = list(item.labels.select_related("annotator").exclude(value=Label.Value.CANT_TELL))
        entries.append({"item": item, "view": blind_item(item), "labels": labels, "final": finals.get(item.pk)})
    unresolved = sum(1 for e in entries if e["final"] and e["final"].status == "conflict")
    return render(request, "labelling/adjudicate.html", {"campaign": campaign, "entries": entries, "unresolved": unresolved})


@require_GET
@eval_owner_required
def export(request: HttpRequest, name: str, fmt: str) -> StreamingHttpResponse:
    campaign = campaign_for_owner(request.user, name)
    if fmt not in ("csv", "jsonl"):
        from django.http import Http404

        raise Http404("Labels are exported as .csv or .jsonl")
    from ..models import ExportRecord
    from ..services.examples import record_export

    item_ids = sorted(set(Label.objects.filter(item__campaign=campaign).values_list("item_id", flat=True)))
    record_export(campaign=campaign, kind=ExportRecord.Kind.LABELS, fmt=fmt, options={}, judge_config=None, item_ids=item_ids,
                  content="", user=request.user)
    content_type = "text/csv" if fmt == "csv" else "application/x-ndjson"
    response = StreamingHttpResponse(export_labels(campaign, fmt), content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{campaign.name}-labels.{fmt}"'
    return response


@require_POST
@eval_owner_required
def import_labels_view(request: HttpRequest, name: str) -> HttpResponse:
    campaign = campaign_for_owner(request.user, name)
    form = LabelImportForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, "Choose a CSV or JSON Lines file of labels.")
        return redirect(reverse("labelling:campaign", args=[campaign.name]))
    upload = form.cleaned_data["file"]
    try:
        job = request_labels_import(
            params=LabelImportParams(campaign=campaign.name, path=str(save_upload(upload)), display_name=upload.name), user=request.user
        )
    except UserFacingError as error:
        messages.error(request, str(error))
        return redirect(reverse("labelling:campaign", args=[campaign.name]))
    return redirect(reverse("evalcore:job", args=[job.pk]))

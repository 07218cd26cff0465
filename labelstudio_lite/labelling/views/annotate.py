"""The labelling page: one item, one decision, a key press, the next item (htmx), blind to the judge."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from ..access import campaign_for_labelling
from ..forms import AnswerForm, ChangeLabelForm
from ..models import Campaign
from ..selectors import annotator_share, blind_item, campaigns_for_annotator, own_label, recent_labels
from ..services.assignment import LabellingError, change_label, next_item, skip_item, submit_label


@require_GET
def my_campaigns(request: HttpRequest) -> HttpResponse:
    campaigns = [(c, annotator_share(campaign=c, user=request.user)) for c in campaigns_for_annotator(request.user)]
    return render(request, "labelling/my_campaigns.html", {"campaigns": campaigns})


def _item_context(request: HttpRequest, campaign: Campaign, notice: str = "", error: str = "") -> dict:
    served = next_item(campaign=campaign, user=request.user)
    share = annotator_share(campaign=campaign, user=request.user)
    item = blind_item(served.item) if served else None  # next_item loads the item's row and question
    return {
        "campaign": campaign,
        "item": item,
        "share": share,
        "notice": notice,
        "error": error,
        # when nothing is left for this annotator their share is done, whatever the arithmetic says
        "percent": 100 if served is None or not share.target else min(100, int(100 * share.done / share.target)),
    }


@never_cache
@require_GET
def label_page(request: HttpRequest, name: str) -> HttpResponse:
    """The labelling page. Opening it claims nothing: the page asks for its item with a POST once loaded."""
    campaign = campaign_for_labelling(request.user, name)
    share = annotator_share(campaign=campaign, user=request.user)
    return render(
        request,
        "labelling/label.html",
        {
            "campaign": campaign,
            "share": share,
            "waiting": True,
            "percent": min(100, int(100 * share.done / share.target)) if share.target else 0,
        },
    )


@never_cache
@require_POST
def take_next(request: HttpRequest, name: str) -> HttpResponse:
    """Claim the item to label now (the page asks once it has loaded; a reload gets the same item back)."""
    campaign = campaign_for_labelling(request.user, name)
    context = _item_context(request, campaign)
    return render(request, "labelling/label.html#item" if request.htmx else "labelling/label.html", context)


@never_cache
@require_POST
def answer(request: HttpRequest, name: str) -> HttpResponse:
    """Take the annotator's answer (or skip) and return the next item."""
    campaign = campaign_for_labelling(request.user, name)
    form = AnswerForm(request.POST)
    notice = error = ""
    if not form.is_valid():
        error = "That answer could not be read: " + "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items())
    else:
        data = form.cleaned_data
        try:
            if data["value"] == "skip":
                skip_item(campaign=campaign, user=request.user, item_id=data["item_id"])
                notice = "Skipped: the item went back to the pool."
            else:
                label = submit_label(
                    campaign=campaign,
                    user=request.user,
                    item_id=data["item_id"],
                    value=data["value"],
                    rationale=data["rationale"],
                )
                notice = f"Saved: {label.get_value_display().lower()}."
        except LabellingError as exc:
            error = str(exc)
    context = _item_context(request, campaign, notice=notice, error=error)
    # htmx swaps the next item in; a plain form post (no JavaScript) gets the whole page with it
    return render(request, "labelling/label.html#item" if request.htmx else "labelling/label.html", context)


@never_cache
@require_GET
def recent(request: HttpRequest, name: str) -> HttpResponse:
    campaign = campaign_for_labelling(request.user, name)
    labels = recent_labels(campaign=campaign, user=request.user)
    template = "labelling/recent.html#list" if request.htmx else "labelling/recent.html"
    return render(request, template, {"campaign": campaign, "labels": labels})


@never_cache
@require_http_methods(["GET", "POST"])
def edit_label(request: HttpRequest, name: str, label_id: int) -> HttpResponse:
    """Reopen one of the annotator's own recent labels and change it."""
    campaign = campaign_for_labelling(request.user, name)
    label = own_label(campaign=campaign, user=request.user, label_id=label_id)
    if label is None:
        raise Http404("That label is not one of yours.")
    error = ""
    if request.method == "POST":
        form = ChangeLabelForm(request.POST)
        if form.is_valid():
            try:
                change_label(
                    campaign=campaign,
                    user=request.user,
                    label_id=label.pk,
                    value=form.cleaned_data["value"],
                    rationale=form.cleaned_data["rationale"],
                )
            except LabellingError as exc:
                error = str(exc)
            else:
                context = _item_context(request, campaign, notice="Changed your earlier label.")
                if request.htmx:
                    return render(request, "labelling/label.html#item", context)
                return redirect(reverse("labelling:label", args=[campaign.name]))
        else:
            error = "Pick supported, unsupported or can't tell."
    context = {"campaign": campaign, "label": label, "item": blind_item(label.item), "error": error}
    template = "labelling/edit_label.html#editor" if request.htmx else "labelling/edit_label.html"
    return render(request, template, context)

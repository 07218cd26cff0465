"""The labelling page: one item, one decision, a key press, the next item, blind to the judge.

The page (``static/js/label.js``) keeps a queue: the item on screen plus a few minutes of work it
holds leases on (``services/pages.py``: at least ``AHEAD``, at most ``MAX_AHEAD``, a fair share),
so the next item appears the moment a key is pressed and the annotator keeps working through an
outage, while answers wait in order (each with its idempotency key). Its requests ask for JSON
(``Accept: application/json``) and every answer comes back with the page's queue refilled; one
page (a browser tab) labels a campaign at a time, and another is told so (409) and may take it
over. Without JavaScript the same URLs take plain form posts and return the whole page.
"""

from __future__ import annotations

import secrets
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from labelstudio_lite.dashboard import annotator_campaigns
from labelstudio_lite.middleware import retry_when_busy

from ..access import campaign_for_labelling
from ..forms import AnswerForm, ChangeLabelForm, HoldingForm
from ..models import Campaign, Label
from ..selectors import Share, annotator_share, blind_item, own_label, recent_labels
from ..services.assignment import (
    AlreadyAnswered,
    Handout,
    LabellingError,
    LeaseExpired,
    change_label,
    hand_out,
    skip_item,
    submit_label,
)
from ..services.pages import MAX_AHEAD, PageClaim, items_ahead, page_claim, page_leave

#: Keys are ignored this long after a new item appears, so a double press cannot answer an item
#: nobody has looked at. The next item appears 11-13 ms (median; p95 under 35 ms) after a key, so
#: a second press g ms after the first lands about g ms into the new item: 250 ms stops double
#: presses up to a quarter of a second apart (the reported one was 150 ms), while reading a new
#: question, its context and its answer takes far longer than that, so a fast annotator never
#: meets it. Measured by test_keypress_to_next_item_over_100_items (tests/labelling/test_browser_slow.py).
GUARD_MS = 250
#: The work the page tries to hold ahead, in seconds at its annotator's pace (so an outage of a few
#: minutes costs nothing); within MAX_AHEAD items and what it could answer before its holds end.
HOLD_SECONDS = 240


def _wants_json(request: HttpRequest) -> bool:
    return "application/json" in request.headers.get("Accept", "")


def _percent(share: Share, *, finished: bool) -> int:
    # when nothing is left for this annotator their share is done, whatever the arithmetic says
    if finished or not share.target:
        return 100 if finished else 0
    return min(100, int(100 * share.done / share.target))


def _share_json(share: Share, *, finished: bool) -> dict[str, Any]:
    return {
        "done": share.done,
        "target": share.target,
        "cant_tell": share.cant_tell,
        "percent": _percent(share, finished=finished),
    }


def _item_html(request: HttpRequest, campaign: Campaign, view: dict[str, Any], key: str) -> str:
    return render_to_string(
        "labelling/label.html#item", {"campaign": campaign, "item": view, "key": key}, request=request
    )


def _batch(
    request: HttpRequest,
    campaign: Campaign,
    handout: Handout,
    *,
    have: list[int],
    result: dict[str, Any] | None = None,
) -> JsonResponse:
    """The page's queue refilled: each held item (its HTML unless the page has it), and the page's progress."""
    now = timezone.now()
    items = []
    for served in handout.served:
        entry: dict[str, Any] = {
            "id": served.item.pk,
            "expires_in": max(0.0, round((served.lease.expires_at - now).total_seconds(), 1)),
        }
        if served.item.pk not in have:
            entry["html"] = _item_html(
                request, campaign, blind_item(served.item, shows=campaign.shows), secrets.token_urlsafe(16)
            )
        items.append(entry)
    share = annotator_share(campaign=campaign, user=request.user)
    data: dict[str, Any] = {
        "result": result,
        "items": items,
        "holding": {str(item_id): status.value for item_id, status in handout.holding.items()},
        "share": _share_json(share, finished=not items),
        "lease_seconds": campaign.lease_length,
    }
    if not items:
        data["done_html"] = render_to_string(
            "labelling/label.html#done", {"campaign": campaign, "share": share}, request=request
        )
    return JsonResponse(data)


def _full_page(request: HttpRequest, campaign: Campaign, *, notice: str = "", error: str = "") -> HttpResponse:
    """The whole page with the item to label now (no JavaScript: one item, nothing held ahead)."""
    served = hand_out(campaign=campaign, user=request.user, holding=[], count=1).served
    share = annotator_share(campaign=campaign, user=request.user)
    return render(
        request,
        "labelling/label.html",
        {
            "campaign": campaign,
            "item": blind_item(served[0].item, shows=campaign.shows) if served else None,
            "key": secrets.token_urlsafe(16),
            "share": share,
            "notice": notice,
            "error": error,
            "guard_ms": GUARD_MS,
            "percent": _percent(share, finished=not served),
        },
    )


@require_GET
def my_campaigns(request: HttpRequest) -> HttpResponse:
    return render(request, "labelling/my_campaigns.html", {"campaigns": annotator_campaigns(request.user)})


@never_cache
@require_GET
def label_page(request: HttpRequest, name: str) -> HttpResponse:
    """The labelling page. Opening it claims nothing: the page asks for its items with a POST once loaded."""
    campaign = campaign_for_labelling(request.user, name)
    share = annotator_share(campaign=campaign, user=request.user)
    latest = recent_labels(campaign=campaign, user=request.user, limit=1)
    return render(
        request,
        "labelling/label.html",
        {
            "campaign": campaign,
            "share": share,
            "waiting": True,
            "guard_ms": GUARD_MS,
            "hold_seconds": HOLD_SECONDS,
            "max_ahead": MAX_AHEAD,
            "latest_label": latest[0].pk if latest else "",
            "percent": _percent(share, finished=False),
        },
    )


@never_cache
@require_POST
@retry_when_busy
def take_next(request: HttpRequest, name: str) -> HttpResponse:
    """Hand the page its items: renew the ones it holds (``have``), claim up to ``AHEAD`` more.

    The page asks once loaded, when it runs short, and while the annotator is active (which keeps
    their leases); a reload gets the same items back.
    """
    campaign = campaign_for_labelling(request.user, name)
    if not _wants_json(request):
        return _full_page(request, campaign)
    form = HoldingForm(request.POST)
    hints = form.cleaned_data if form.is_valid() else {}
    claim = _claim(campaign, request, hints, take_over=hints.get("take_over", False))
    if not claim.ok:
        return _elsewhere(claim)
    have = hints.get("have", [])
    count = 1 + items_ahead(campaign=campaign, wanted=hints.get("ahead"))
    handout = hand_out(campaign=campaign, user=request.user, holding=have, count=count)
    return _batch(request, campaign, handout, have=have)


def _claim(campaign: Campaign, request: HttpRequest, hints: dict[str, Any], *, take_over: bool) -> PageClaim:
    """The page's claim on the campaign; a request that names no page (no JavaScript, an old page) needs none."""
    if not hints.get("page"):
        return PageClaim(True)
    return page_claim(campaign=campaign, user=request.user, page=hints["page"], take_over=take_over)


def _elsewhere(claim: PageClaim, result: dict[str, Any] | None = None) -> JsonResponse:
    """409: another page of this person's has the campaign; nothing was handed out (an answer was still taken)."""
    return JsonResponse({"result": result, "elsewhere": claim.as_json()}, status=200 if result else 409)


def _take_answer(request: HttpRequest, campaign: Campaign, form: AnswerForm) -> dict[str, Any]:
    """Save (or skip) one answer; return its outcome as the page shows it."""
    if not form.is_valid():
        problems = "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items())
        return {"outcome": "invalid", "message": f"That answer could not be read: {problems}"}
    data = form.cleaned_data
    item_id = data["item_id"]
    try:
        if data["value"] == "skip":
            skip_item(campaign=campaign, user=request.user, item_id=item_id)
            return {"outcome": "skipped", "item_id": item_id, "message": "Skipped: the item went back to the pool."}
        label = submit_label(
            campaign=campaign,
            user=request.user,
            item_id=item_id,
            value=data["value"],
            rationale=data["rationale"],
            key=data["key"],
            seconds=data["seconds"],
        )
    except AlreadyAnswered as exc:
        return {
            "outcome": "other_tab",
            "item_id": item_id,
            "label_id": exc.label.pk,
            "value": exc.label.answer,
            "message": str(exc),
        }
    except LeaseExpired as exc:
        return {"outcome": "refused", "item_id": item_id, "message": str(exc)}
    except LabellingError as exc:
        return {"outcome": "invalid", "item_id": item_id, "message": str(exc)}
    return {
        "outcome": "saved",
        "item_id": item_id,
        "label_id": label.pk,
        "value": label.answer,
        "message": f"Saved: {campaign.answer_word(label.answer)}.",
    }


@never_cache
@require_POST
@retry_when_busy
def answer(request: HttpRequest, name: str) -> HttpResponse:
    """Take the annotator's answer (or skip); return the page's queue refilled (or the page, without JavaScript)."""
    campaign = campaign_for_labelling(request.user, name)
    form = AnswerForm(request.POST)
    result = _take_answer(request, campaign, form)
    if not _wants_json(request):
        failed = result["outcome"] not in ("saved", "skipped")
        message = result["message"]
        return _full_page(request, campaign, notice="" if failed else message, error=message if failed else "")
    hints = form.cleaned_data if hasattr(form, "cleaned_data") else {}
    claim = _claim(campaign, request, hints, take_over=False)
    if not claim.ok:
        return _elsewhere(claim, result)
    have = hints.get("have", [])
    count = 1 + items_ahead(campaign=campaign, wanted=hints.get("ahead"))
    handout = hand_out(campaign=campaign, user=request.user, holding=have, count=count)
    return _batch(request, campaign, handout, have=have, result=result)


@never_cache
@require_POST
def leave(request: HttpRequest, name: str) -> HttpResponse:
    """The labelling page is closing (or reloading): it gives up its claim on the campaign (204)."""
    campaign = campaign_for_labelling(request.user, name)
    form = HoldingForm(request.POST)
    if form.is_valid() and form.cleaned_data["page"]:
        page_leave(campaign=campaign, user=request.user, page=form.cleaned_data["page"])
    return HttpResponse(status=204)


@never_cache
@require_GET
def recent(request: HttpRequest, name: str) -> HttpResponse:
    campaign = campaign_for_labelling(request.user, name)
    labels = recent_labels(campaign=campaign, user=request.user)
    template = "labelling/recent.html#list" if request.htmx else "labelling/recent.html"
    return render(request, template, {"campaign": campaign, "labels": labels})


@never_cache
@require_http_methods(["GET", "POST"])
@retry_when_busy
def edit_label(request: HttpRequest, name: str, label_id: int) -> HttpResponse:
    """Reopen one of the annotator's own labels and change it (Z on the labelling page opens the last one here)."""
    campaign = campaign_for_labelling(request.user, name)
    label = own_label(campaign=campaign, user=request.user, label_id=label_id)
    if label is None:
        raise Http404("That label is not one of yours in this campaign.")
    error = ""
    if request.method == "POST":
        form = ChangeLabelForm(request.POST)
        if form.is_valid():
            try:
                label = change_label(
                    campaign=campaign,
                    user=request.user,
                    label_id=label.pk,
                    value=form.cleaned_data["value"],
                    rationale=form.cleaned_data["rationale"],
                )
            except LabellingError as exc:
                error = str(exc)
            else:
                if _wants_json(request):
                    share = annotator_share(campaign=campaign, user=request.user)
                    return JsonResponse(
                        {
                            "result": {
                                "outcome": "changed",
                                "item_id": label.item_id,
                                "label_id": label.pk,
                                "value": label.answer,
                                "message": f"Changed your earlier answer to {campaign.answer_word(label.answer)}.",
                            },
                            "share": _share_json(share, finished=False),
                        }
                    )
                return redirect(reverse("labelling:label", args=[campaign.name]))
        else:
            error = "Pick " + ", ".join(c["word"].lower() for c in campaign.choices) + "."
        if _wants_json(request):
            return JsonResponse({"result": {"outcome": "invalid", "label_id": label.pk, "message": error}})
    context = {
        "campaign": campaign,
        "label": label,
        "current_word": campaign.answer_word(label.answer),
        "item": blind_item(label.item, shows=campaign.shows),
        "error": error,
        "values": Label.Value.choices,
    }
    template = "labelling/edit_label.html#editor" if request.htmx else "labelling/edit_label.html"
    return render(request, template, context)

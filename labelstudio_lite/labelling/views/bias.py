"""The judge's bias battery page (eval owners): the probes and their text, the cost estimate, starting a battery
(a job with progress and cancel), its stored findings, and adding an owner's probe."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from evalcore.jobs.bias_kinds import JUDGE_BIAS, BiasBatteryParams, request_bias_battery
from evalcore.models import Job
from evalcore.services.problems import UserFacingError
from evalcore.views.jobs import job_form_page, register_job_form
from labelstudio_lite.accounts.access import eval_owner_required

from ..access import campaign_for_owner
from ..bias_forms import BiasBatteryForm, BiasProbeForm
from ..bias_selectors import bias_verdict_of, campaign_batteries, campaign_battery
from ..models import Campaign
from ..services.bias_battery import DEFAULT_ALPHA, DEFAULT_BAR, available_probes, bias_estimate, bias_plan, probe_add
from .actions import Done, form_post

register_job_form(JUDGE_BIAS, lambda job: reverse("labelling:bias", args=[job.params["campaign"]]))


def _params(campaign: Campaign, data: dict) -> BiasBatteryParams:
    return BiasBatteryParams(
        campaign=campaign.name,
        judge_config=data["judge_config"].pk,
        probes=list(data.get("probes") or []),
        bar=data["bar"],
        alpha=data["alpha"],
        correction=data["correction"],
    )


def _estimate(campaign: Campaign, chosen: BiasBatteryForm | None) -> tuple[object, str]:
    if chosen is None or not chosen.is_valid():
        return None, ""
    data = chosen.cleaned_data
    try:
        plan = bias_plan(
            campaign=campaign,
            config=data["judge_config"],
            probes=list(data["probes"]) or None,
            bar=data["bar"],
            alpha=data["alpha"],
            correction=data["correction"],
        )
        return bias_estimate(plan), ""
    except UserFacingError as error:
        return None, str(error)


@require_http_methods(["GET", "POST"])
@eval_owner_required
def bias_page(request: HttpRequest, name: str) -> HttpResponse:
    """GET shows the probes, the estimate once a config is chosen (htmx swaps it in) and the findings; POST starts."""
    campaign = campaign_for_owner(request.user, name)
    chosen = None
    if "judge_config" in request.GET:
        asked = request.GET.copy()
        for name, value in (("bar", DEFAULT_BAR), ("alpha", DEFAULT_ALPHA), ("correction", "holm")):
            asked.setdefault(name, str(value))
        chosen = BiasBatteryForm(asked)
    estimate, refused = _estimate(campaign, chosen)
    form = BiasBatteryForm(request.POST or None, initial=chosen.cleaned_data if estimate else None)
    batteries = list(campaign_batteries(campaign)[:20])
    selected = campaign_battery(campaign, request.GET["battery"]) if request.GET.get("battery") else None
    selected = selected or (batteries[0] if batteries else None)

    def start(data: dict) -> Job:
        return request_bias_battery(params=_params(campaign, data), user=request.user)

    context = {
        "campaign": campaign,
        "probes": available_probes(),
        "chosen": chosen,
        "estimate": estimate,
        "refused": refused,
        "batteries": batteries,
        "battery": selected,
        "verdict": bias_verdict_of(selected) if selected else None,
        "probe_form": BiasProbeForm(),
    }
    if request.method == "GET" and request.htmx and chosen is not None:
        return job_form_page(
            request, form, start=start, template="labelling/bias.html#estimate", context=lambda: context
        )
    return job_form_page(request, form, start=start, template="labelling/bias.html", context=lambda: context)


@require_POST
@eval_owner_required
def bias_probe_add(request: HttpRequest, name: str) -> HttpResponse:
    campaign = campaign_for_owner(request.user, name)

    def add(data: dict) -> Done:
        probe = probe_add(user=request.user, **data)
        return Done(f"Probe {probe} is ready: {probe.describes}.")

    return form_post(
        request,
        BiasProbeForm(request.POST),
        back=reverse("labelling:bias", args=[campaign.name]),
        invalid="Probe: give a name, a kind, a field, its text and what it does in words.",
        run=add,
    )

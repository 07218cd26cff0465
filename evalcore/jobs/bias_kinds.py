"""The bias battery's job kind: run bias probes through the judge runner on a campaign's tuning items.

One request function that every door calls (page, API, CLI) and that refuses what it can before a
job exists; the handler calls :func:`~labelstudio_lite.labelling.services.bias_battery.bias_battery_run` with the job's
progress and cancel. Resumable: the calls are cached, so a lost worker's job starts again and pays
only for what it had not received.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.urls import reverse

from labelstudio_lite.labelling.selectors import campaign_get
from labelstudio_lite.labelling.services.bias_battery import (
    DEFAULT_ALPHA,
    DEFAULT_BAR,
    BiasPlan,
    bias_battery_run,
    bias_plan,
)

from ..models import Job, JudgeConfig
from ..selectors import NotFound
from ..services.importing import Progress
from ..services.problems import about_field
from .dispatch import job_request
from .registry import register_job_kind
from .runner import job_cancel_requested

JUDGE_BIAS = "judge_bias"


@dataclass(frozen=True, kw_only=True)
class BiasBatteryParams:
    campaign: str
    judge_config: int
    probes: list[str] = field(default_factory=list)  # empty: every available probe
    bar: float = DEFAULT_BAR
    alpha: float = DEFAULT_ALPHA
    correction: str = "holm"


def bias_params_plan(params: BiasBatteryParams) -> BiasPlan:
    campaign = about_field("campaign", lambda: campaign_get(params.campaign))
    config = JudgeConfig.objects.filter(pk=params.judge_config).first()
    if config is None:
        raise NotFound(f"there is no judge config with id {params.judge_config}", field="judge_config")
    return bias_plan(
        campaign=campaign,
        config=config,
        probes=list(params.probes) or None,
        bar=params.bar,
        alpha=params.alpha,
        correction=params.correction,
    )


def request_bias_battery(*, params: BiasBatteryParams, user: Any = None, start: bool = True) -> Job:
    """Accept a bias battery as a job, or refuse it at once (judge not runnable, no tuning item, unknown probe...)."""
    bias_params_plan(params)
    return job_request(kind=JUDGE_BIAS, params=params, user=user, start=start)


@register_job_kind(name=JUDGE_BIAS, label="Bias battery for a judge", params=BiasBatteryParams, resumable=True)
def _judge_bias(params: BiasBatteryParams, job: Job, progress: Progress) -> dict[str, Any]:
    outcome = bias_battery_run(
        bias_params_plan(params),
        user=job.created_by,
        progress=progress,
        should_stop=lambda: job_cancel_requested(job.pk),
    )
    battery = outcome.battery
    return {
        "message": outcome.message,
        "battery": battery.pk,
        "created": outcome.created,
        "blocks_gating": battery.blocks_gating,
        "verdict": battery.verdict,
        "url": reverse("labelling:bias", args=[battery.campaign.name]) + f"?battery={battery.pk}",
        **outcome.totals,
    }

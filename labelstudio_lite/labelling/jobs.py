"""Job handlers of the labelling app (registered with evalcore's job dispatcher)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.urls import reverse

from evalcore.models import Job
from evalcore.services.dispatch import job_handler

from .models import Campaign
from .services.examples import verdicts_import
from .services.labels_io import labels_import


@job_handler(Job.Kind.IMPORT_LABELS)
def _import_labels(job: Job, progress: Any) -> dict[str, Any]:
    params = job.params
    campaign = Campaign.objects.get(name=params["campaign"])
    result = labels_import(campaign=campaign, path=Path(params["path"]), display_name=params.get("display_name"), progress=progress)
    return {"message": result.message, "created": result.created, "url": reverse("labelling:campaign", args=[campaign.name])}


@job_handler(Job.Kind.IMPORT_VERDICTS)
def _import_verdicts(job: Job, progress: Any) -> dict[str, Any]:
    params = job.params
    campaign = Campaign.objects.get(name=params["campaign"])
    verdict_set, created, message = verdicts_import(
        campaign=campaign, path=Path(params["path"]), judge_config=params["judge_config"], display_name=params.get("display_name"),
        user=job.created_by,
    )
    return {"message": message, "created": created, "verdict_set": verdict_set.pk,
            "url": reverse("labelling:report", args=[campaign.name]) + f"?verdicts={verdict_set.pk}"}

"""The labelling app's job kinds: import labels made elsewhere, import a new judge config's verdicts.

Registered with evalcore's one job lifecycle (:mod:`evalcore.services.jobs`); each kind has a
parameters dataclass and one request function that every door calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.urls import reverse

from evalcore.models import Job
from evalcore.services.jobs import Progress, job_request, register_job_kind
from evalcore.services.judge_configs import normalize_judge_config
from evalcore.services.problems import UserFacingError, about_field
from evalcore.services.uploads import discarding_uploads

from .models import Campaign
from .selectors import campaign_get
from .services.label_import import labels_import
from .services.verdicts import verdicts_import

IMPORT_LABELS = "import_labels"
IMPORT_VERDICTS = "import_verdicts"


def _check_campaign_and_file(params: LabelImportParams | VerdictImportParams) -> Campaign:
    """Refuse at once what the job would fail on: no such campaign, no such file."""
    campaign = about_field("campaign", lambda: campaign_get(params.campaign))
    if not Path(params.path).is_file():
        raise UserFacingError(f"{params.display_name or Path(params.path).name}: no such file", field="file")
    return campaign


@dataclass(frozen=True, kw_only=True)
class LabelImportParams:
    campaign: str
    path: str
    display_name: str | None = None


@discarding_uploads
def request_labels_import(*, params: LabelImportParams, user: Any = None, start: bool = True) -> Job:
    """Accept a label import as a job, or refuse it at once (no such campaign or file)."""
    _check_campaign_and_file(params)
    return job_request(kind=IMPORT_LABELS, params=params, user=user, start=start)


@register_job_kind(name=IMPORT_LABELS, label="Import labels", params=LabelImportParams)
def _import_labels(params: LabelImportParams, job: Job, progress: Progress) -> dict[str, Any]:
    campaign = campaign_get(params.campaign)
    result = labels_import(
        campaign=campaign, path=Path(params.path), display_name=params.display_name, progress=progress
    )
    return {
        "message": result.message,
        "created": result.created,
        "url": reverse("labelling:campaign", args=[campaign.name]),
    }


@dataclass(frozen=True, kw_only=True)
class VerdictImportParams:
    campaign: str
    path: str
    judge_config: dict[str, Any]
    display_name: str | None = None


@discarding_uploads
def request_verdicts_import(*, params: VerdictImportParams, user: Any = None, start: bool = True) -> Job:
    """Accept an import of a new judge config's verdicts as a job, or refuse it at once."""
    _check_campaign_and_file(params)
    about_field("judge_config", lambda: normalize_judge_config(params.judge_config))
    return job_request(kind=IMPORT_VERDICTS, params=params, user=user, start=start)


@register_job_kind(name=IMPORT_VERDICTS, label="Import judge verdicts", params=VerdictImportParams)
def _import_verdicts(params: VerdictImportParams, job: Job, progress: Progress) -> dict[str, Any]:
    campaign = campaign_get(params.campaign)
    result = verdicts_import(
        campaign=campaign,
        path=Path(params.path),
        judge_config=params.judge_config,
        display_name=params.display_name,
        user=job.created_by,
    )
    return {
        "message": result.message,
        "created": result.created,
        "verdict_set": result.verdict_set.pk,
        "url": reverse("labelling:report", args=[campaign.name]) + f"?verdicts={result.verdict_set.pk}",
    }

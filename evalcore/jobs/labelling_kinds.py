"""The labelling app's job kinds: import labels made elsewhere, import a new judge config's verdicts,
try a tuned prompt on the held-out items.

Registered with evalcore's one job lifecycle (:mod:`evalcore.jobs`); each kind has a parameters
dataclass and one request function that every door calls. The labelling app's ``ready()`` imports this
module (evalcore's own app does not), so the kinds exist where the labelling app is installed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.urls import reverse

from labelstudio_lite.labelling.models import Campaign
from labelstudio_lite.labelling.selectors import campaign_get
from labelstudio_lite.labelling.services.label_import import VALUES, labels_import
from labelstudio_lite.labelling.services.label_sources import MATCHES, LabelSource, read_users
from labelstudio_lite.labelling.services.tuned_prompt import TunedPrompt, tuned_prompt_check, tuned_prompt_try
from labelstudio_lite.labelling.services.verdicts import verdicts_import

from ..models import Job, JudgeConfig
from ..selectors import NotFound
from ..services.importing import Progress
from ..services.judge_configs import normalize_judge_config
from ..services.problems import UserFacingError, about_field
from ..services.readers import detect_format
from ..services.uploads import discarding_uploads, local_head, upload_exists
from .dispatch import job_request
from .registry import register_job_kind
from .runner import job_cancel_requested

IMPORT_LABELS = "import_labels"
IMPORT_VERDICTS = "import_verdicts"
TRY_PROMPT = "try_prompt"


def _check_campaign_and_file(params: LabelImportParams | VerdictImportParams) -> Campaign:
    """Refuse at once what the job would fail on: no such campaign, no such file."""
    campaign = about_field("campaign", lambda: campaign_get(params.campaign))
    if not upload_exists(params.path):
        raise UserFacingError(f"{params.display_name or Path(params.path).name}: no such file", field="file")
    return campaign


@dataclass(frozen=True, kw_only=True)
class LabelImportParams:
    campaign: str
    path: str
    display_name: str | None = None
    format: str | None = None  # None: from the file's extension and content
    label_field: str | None = None
    value_map: dict[str, str] = field(default_factory=dict)
    users_path: str | None = None
    match: str = "auto"
    id_field: str | None = None


@discarding_uploads
def request_labels_import(*, params: LabelImportParams, user: Any = None, start: bool = True) -> Job:
    """Accept a label import as a job, or refuse it at once (no such campaign or file, a bad option)."""
    _check_campaign_and_file(params)
    with local_head(params.path) as file:
        about_field("format", lambda: detect_format(file, params.format, door="labels", display=params.display_name))
    if params.match not in MATCHES:
        raise UserFacingError(f"match must be one of {', '.join(MATCHES)}, got {params.match!r}", field="match")
    if params.users_path and not upload_exists(params.users_path):
        raise UserFacingError(f"{params.users_path}: no such file (users)", field="users")
    bad = sorted({v for v in params.value_map.values() if str(v).strip().lower() not in VALUES})
    if bad:
        raise UserFacingError(
            f"the value map maps to {bad}; map each value to supported, unsupported or cant_tell", field="value_map"
        )
    return job_request(kind=IMPORT_LABELS, params=params, user=user, start=start)


@register_job_kind(name=IMPORT_LABELS, label="Import labels", params=LabelImportParams)
def _import_labels(params: LabelImportParams, job: Job, progress: Progress) -> dict[str, Any]:
    campaign = campaign_get(params.campaign)
    users = read_users(Path(params.users_path)) if params.users_path else {}
    source = LabelSource(
        label_field=params.label_field or None,
        value_map=dict(params.value_map),
        users=users,
        match=params.match,
        id_field=params.id_field or None,
    )
    result = labels_import(
        campaign=campaign,
        path=Path(params.path),
        display_name=params.display_name,
        fmt=params.format or None,
        source=source,
        progress=progress,
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


@dataclass(frozen=True, kw_only=True)
class TryPromptParams:
    campaign: str
    base_config: int  # the runnable judge config the tuned one derives from
    name: str  # the new config's name
    export: int | None = None  # a disagreement export version: the few-shot examples
    export_campaign: str | None = None  # the campaign of that export (default: this one)
    prompt: str | None = None  # the edited verdict prompt (default: the base config's)
    claims: str = "keep"


def _plan(params: TryPromptParams) -> TunedPrompt:
    base = JudgeConfig.objects.filter(pk=params.base_config).first()
    if base is None:
        raise NotFound(f"there is no judge config with id {params.base_config}")
    return TunedPrompt(
        campaign=campaign_get(params.campaign),
        base=base,
        name=params.name,
        export=params.export,
        export_campaign=params.export_campaign,
        prompt=params.prompt,
        claims=params.claims,
    )


def request_try_prompt(*, params: TryPromptParams, user: Any = None, start: bool = True) -> Job:
    """Accept trying a tuned prompt on the held-out items as a job, or refuse it at once (leakage, split looked at...)."""
    tuned_prompt_check(_plan(params))
    return job_request(kind=TRY_PROMPT, params=params, user=user, start=start)


@register_job_kind(name=TRY_PROMPT, label="Try a tuned prompt", params=TryPromptParams, resumable=True)
def _try_prompt(params: TryPromptParams, job: Job, progress: Progress) -> dict[str, Any]:
    result = tuned_prompt_try(
        _plan(params), user=job.created_by, progress=progress, should_stop=lambda: job_cancel_requested(job.pk)
    )
    return {
        "message": result.message,
        "url": result.url,
        "judge_config": result.config.pk,
        "verdict_set": result.verdict_set.pk,
        **result.totals,
    }

"""evalcore's job kinds: import an eval set, import a run, compare and gate, judge a run, re-score a baseline.

Each kind has a frozen parameters dataclass (stored as the job's params), one request function
that every door calls (page, API, CLI) and that refuses what it can refuse before a job exists,
and a handler that calls the kind's service when the job runs (see :mod:`evalcore.jobs.runner`).
evalcore's ``ready()`` imports this module, which registers the kinds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..models import EvalSetVersion, Job, JudgeConfig, Run
from ..selectors import NotFound, version_by_ref
from ..services.comparisons import SLICE_COLUMN, check_gate_correction, check_margins, compare_runs, comparison_check
from ..services.evalsets import EvalSetImportResult, evalset_import
from ..services.fields import FieldError, json_safe
from ..services.importing import Progress
from ..services.judge_configs import normalize_judge_config
from ..services.judge_correction import check_judge_correction
from ..services.judge_fitness import check_judge_policy
from ..services.judge_runs import default_name, judge_run, judge_run_check, rescore_plan
from ..services.names import check_name
from ..services.problems import ImportFailed, ImportProblem, UserFacingError, about_field
from ..services.readers import detect_format
from ..services.run_options import GAINS
from ..services.runs import run_import
from ..services.trec import TIE_ORDERS
from ..services.uploads import discarding_uploads, local_head, upload_exists
from .dispatch import job_request
from .registry import register_job_kind
from .runner import job_cancel_requested

IMPORT_EVALSET = "import_evalset"
IMPORT_RUN = "import_run"
GATE = "gate"
JUDGE_RUN = "judge_run"
RESCORE_BASELINE = "rescore_baseline"


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None


def _check_file(path: str, display: str | None, fmt: str | None, *, door: str) -> None:
    """Refuse at once a missing file, or one whose format (named, or told from its name and content) this door does not take."""
    if not upload_exists(path):
        raise ImportFailed([ImportProblem(display or Path(path).name, None, None, "no such file")])
    with local_head(path) as file:
        about_field("format" if fmt else "file", lambda: detect_format(file, fmt, door=door, display=display))


# ----------------------------------------------------------------------------------------------
# Import an eval set
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class EvalSetImportParams:
    path: str
    name: str
    format: str | None = None
    display_name: str | None = None
    mode: str = "replace"
    base_version: int | None = None
    topics_path: str | None = None
    description: str = ""


@discarding_uploads
def request_evalset_import(*, params: EvalSetImportParams, user: Any = None, start: bool = True) -> Job:
    """Accept an eval set import as a job, or refuse it at once (bad name, format or mode, no version to extend)."""
    about_field("name", lambda: check_name(params.name, what="eval set"))
    _check_file(params.path, params.display_name, params.format, door="questions")
    if params.mode not in ("replace", "extend"):
        raise UserFacingError(f"mode must be 'replace' or 'extend', got {params.mode!r}", field="extend")
    if params.topics_path and not upload_exists(params.topics_path):
        raise UserFacingError(f"{params.topics_path}: no such file (topics)", field="topics")
    versions = EvalSetVersion.objects.filter(eval_set__name=params.name)
    if params.base_version is not None and not versions.filter(number=params.base_version).exists():
        raise UserFacingError(f"eval set {params.name!r} has no version {params.base_version}", field="base")
    if params.mode == "extend" and not versions.exists():
        raise UserFacingError(
            f"eval set {params.name!r} has no version to extend; import it without extend first", field="extend"
        )
    return job_request(kind=IMPORT_EVALSET, params=params, user=user, start=start)


def evalset_result(result: EvalSetImportResult) -> dict[str, Any]:
    return {
        "created": result.created,
        "message": result.message,
        "version_id": result.version.pk,
        "eval_set": result.version.eval_set.name,
        "version": result.version.number,
    }


@register_job_kind(name=IMPORT_EVALSET, label="Import eval set", params=EvalSetImportParams)
def _import_evalset(params: EvalSetImportParams, job: Job, progress: Progress) -> dict[str, Any]:
    result = evalset_import(
        path=Path(params.path),
        name=params.name,
        fmt=params.format or None,
        display_name=params.display_name,
        mode=params.mode,
        base_version=params.base_version,  # type: ignore[arg-type]
        topics_path=_path(params.topics_path),
        description=params.description,
        user=job.created_by,
        progress=progress,
    )
    return evalset_result(result)


# ----------------------------------------------------------------------------------------------
# Import a run
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class RunImportParams:
    path: str
    evalset: str
    name: str
    format: str | None = None
    display_name: str | None = None
    k: int | None = None
    gain: str | None = None  # None: linear for a TREC run (trec_eval's), exponential otherwise
    cutoffs: list[int] = field(default_factory=list)
    ties: str = "docno-desc"
    missing_topics: str = "skip"
    judge_config: dict[str, Any] | None = None
    system_config: dict[str, Any] | None = None
    chunks_path: str | None = None
    description: str = ""


@discarding_uploads
def request_run_import(*, params: RunImportParams, user: Any = None, start: bool = True) -> Job:
    """Accept a run import as a job, or refuse it at once (bad name, unknown eval set, bad judge config...)."""
    about_field("name", lambda: check_name(params.name, what="run"))
    _check_file(params.path, params.display_name, params.format, door="run")
    if params.chunks_path and not upload_exists(params.chunks_path):
        raise UserFacingError(f"{params.chunks_path}: no such file (chunk map)", field="chunks")
    if params.gain is not None and params.gain not in GAINS:
        raise UserFacingError(f"gain must be 'exponential' or 'linear', got {params.gain!r}", field="gain")
    if params.k is not None and (isinstance(params.k, bool) or not isinstance(params.k, int) or params.k < 1):
        raise UserFacingError(
            f"k must be a positive integer (chunks that reach the model), got {params.k!r}", field="k"
        )
    if any(isinstance(c, bool) or not isinstance(c, int) or c < 1 for c in params.cutoffs):
        raise UserFacingError(f"cut-offs must be positive integers, got {params.cutoffs!r}", field="cutoffs")
    if params.ties not in TIE_ORDERS:
        raise UserFacingError(f"ties must be one of {', '.join(TIE_ORDERS)}, got {params.ties!r}", field="ties")
    if params.missing_topics not in ("skip", "fail"):
        raise UserFacingError(
            f"missing_topics must be 'skip' or 'fail', got {params.missing_topics!r}", field="missing_topics"
        )
    about_field("evalset", lambda: version_by_ref(params.evalset))
    if params.judge_config is not None:
        about_field("judge_config", lambda: normalize_judge_config(params.judge_config))
    if params.system_config is not None:
        if not isinstance(params.system_config, dict):
            raise UserFacingError("the system config must be a JSON object", field="system_config")
        try:
            json_safe(params.system_config, "system_config")
        except FieldError as error:
            raise UserFacingError(
                f"the system config's {error.field}: {error.message}", field="system_config"
            ) from None
    return job_request(kind=IMPORT_RUN, params=params, user=user, start=start)


@register_job_kind(name=IMPORT_RUN, label="Import run", params=RunImportParams)
def _import_run(params: RunImportParams, job: Job, progress: Progress) -> dict[str, Any]:
    result = run_import(
        path=Path(params.path),
        evalset=params.evalset,
        name=params.name,
        fmt=params.format or None,
        display_name=params.display_name,
        k=params.k,
        cutoffs=list(params.cutoffs),
        gain=params.gain,
        ties=params.ties,
        missing_topics=params.missing_topics,
        judge_config=params.judge_config,
        system_config=params.system_config,
        chunks_path=_path(params.chunks_path),
        description=params.description,
        user=job.created_by,
        progress=progress,
    )
    return {"created": result.created, "message": result.message, "run_id": result.run.pk}


# ----------------------------------------------------------------------------------------------
# Compare and gate
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class GateParams:
    base: int
    candidate: int
    metrics: list[str] = field(default_factory=list)
    slice_by: str | None = SLICE_COLUMN
    margin: float | None = None
    margins: dict[str, float] = field(default_factory=dict)
    lower_is_better: list[str] = field(default_factory=list)
    judge_policy: str | None = None  # None: GATE_JUDGE_POLICY
    correction: str | None = None  # None: GATE_CORRECTION
    judge_correction: str = "none"  # "ppi": judge metrics on the prediction-powered difference where labelled


def _runs(params: GateParams) -> tuple[Run, Run]:
    runs = Run.objects.select_related("version__eval_set", "judge_config").in_bulk([params.base, params.candidate])
    missing = [(pk, field) for pk, field in ((params.base, "base"), (params.candidate, "candidate")) if pk not in runs]
    if missing:
        raise NotFound(f"there is no run with id {missing[0][0]}", field=missing[0][1])
    return runs[params.base], runs[params.candidate]


def request_gate(*, params: GateParams, user: Any = None, start: bool = True) -> Job:
    """Accept a comparison as a job, or refuse it at once (same run, different versions, nothing comparable)."""
    base, candidate = _runs(params)
    comparison_check(base=base, candidate=candidate, metrics=params.metrics or None, slice_by=params.slice_by)
    about_field(
        "margins" if params.margins else "margin", lambda: check_margins(margin=params.margin, margins=params.margins)
    )
    if params.judge_policy is not None:
        about_field("judge_policy", lambda: check_judge_policy(params.judge_policy))
    if params.correction is not None:
        about_field("correction", lambda: check_gate_correction(params.correction))
    about_field("judge_correction", lambda: check_judge_correction(params.judge_correction))
    return job_request(kind=GATE, params=params, user=user, start=start)


@register_job_kind(name=GATE, label="Compare and gate", params=GateParams)
def _gate(params: GateParams, job: Job, progress: Progress) -> dict[str, Any]:
    base, candidate = _runs(params)
    return _compare(params, base, candidate, job, progress)


def _compare(params: GateParams, base: Run, candidate: Run, job: Job, progress: Progress) -> dict[str, Any]:
    outcome = compare_runs(
        base=base,
        candidate=candidate,
        metrics=params.metrics or None,
        slice_by=params.slice_by,
        margin=params.margin,
        margins=params.margins or None,
        lower_is_better=params.lower_is_better,
        judge_policy=params.judge_policy,
        correction=params.correction,
        judge_correction=params.judge_correction,
        user=job.created_by,
        progress=progress,
    )
    return {"comparison_id": outcome.comparison.pk, "overall": outcome.report.overall}


# ----------------------------------------------------------------------------------------------
# Judge a run with a runnable judge config (a new run with lineage)
# ----------------------------------------------------------------------------------------------


def _config(pk: int) -> JudgeConfig:
    config = JudgeConfig.objects.filter(pk=pk).first()
    if config is None:
        raise NotFound(f"there is no judge config with id {pk}")
    return config


def _run(pk: int) -> Run:
    run = Run.objects.select_related("version__eval_set", "judge_config").filter(pk=pk).first()
    if run is None:
        raise NotFound(f"there is no run with id {pk}")
    return run


@dataclass(frozen=True, kw_only=True)
class JudgeRunParams:
    run: int
    judge_config: int
    claims: str = "keep"  # keep the row's claims, or split the answer into claims first
    name: str | None = None  # default: RUN-by-CONFIG


def request_judge_run(*, params: JudgeRunParams, user: Any = None, start: bool = True) -> Job:
    """Accept judging a run as a job, or refuse it at once (judge not runnable, no claim prompt, name taken)."""
    judge_run_check(run=_run(params.run), config=_config(params.judge_config), claims=params.claims, name=params.name)
    return job_request(kind=JUDGE_RUN, params=params, user=user, start=start)


@register_job_kind(name=JUDGE_RUN, label="Judge a run", params=JudgeRunParams, resumable=True)
def _judge_run(params: JudgeRunParams, job: Job, progress: Progress) -> dict[str, Any]:
    result = judge_run(
        run=_run(params.run),
        config=_config(params.judge_config),
        claims=params.claims,
        name=params.name,
        user=job.created_by,
        progress=progress,
        should_stop=lambda: job_cancel_requested(job.pk),
    )
    return {"message": result.message, "run_id": result.run.pk, "created": result.created, **result.totals}


# ----------------------------------------------------------------------------------------------
# Re-score the baseline: the older run of a comparison, with the newer run's judge; then compare
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class RescoreParams(GateParams):
    claims: str = "keep"


def request_rescore_baseline(*, params: RescoreParams, user: Any = None, start: bool = True) -> Job:
    """Accept re-scoring the older run with the newer run's judge and comparing, or refuse it at once."""
    base, candidate = _runs(params)
    older, config = rescore_plan(base=base, candidate=candidate)
    check_margins(margin=params.margin, margins=params.margins)
    if params.judge_policy is not None:
        check_judge_policy(params.judge_policy)
    if params.correction is not None:
        check_gate_correction(params.correction)
    existing = Run.objects.filter(version=older.version, name=default_name(older, config)).first()
    if existing is None or existing.derived_from_id != older.pk:
        judge_run_check(run=older, config=config, claims=params.claims, name=None)
    return job_request(kind=RESCORE_BASELINE, params=params, user=user, start=start)


@register_job_kind(name=RESCORE_BASELINE, label="Re-score the baseline", params=RescoreParams, resumable=True)
def _rescore_baseline(params: RescoreParams, job: Job, progress: Progress) -> dict[str, Any]:
    base, candidate = _runs(params)
    older, config = rescore_plan(base=base, candidate=candidate)
    rescored = judge_run(
        run=older,
        config=config,
        claims=params.claims,
        user=job.created_by,
        progress=progress,
        should_stop=lambda: job_cancel_requested(job.pk),
    )
    if older.pk == base.pk:
        base = rescored.run
    else:
        candidate = rescored.run
    compared = _compare(params, base, candidate, job, progress)
    return {**compared, "message": rescored.message, "rescored_run_id": rescored.run.pk, **rescored.totals}

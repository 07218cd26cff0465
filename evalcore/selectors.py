"""Reads: the queries pages, the API and the CLI share."""

from __future__ import annotations

from typing import Any

import pandas as pd
from django.db.models import Count, Q, QuerySet

from .models import Comparison, EvalSet, EvalSetVersion, Row, Run
from .services.names import parse_version_ref
from .services.problems import UserFacingError
from .services.summaries import NO_TYPE, slice_name


class NotFound(UserFacingError):
    pass


def versions_by_ref(ref: str) -> QuerySet[EvalSetVersion]:
    """The versions ``NAME@V`` names (one), or every version of ``NAME``, newest first."""
    parsed = parse_version_ref(ref)
    versions = EvalSetVersion.objects.select_related("eval_set").filter(eval_set__name=parsed.name).order_by("-number")
    return versions if parsed.number is None else versions.filter(number=parsed.number)


def version_by_ref(ref: str) -> EvalSetVersion:
    """Return the version ``NAME@V``, or the latest version of ``NAME``; :class:`NotFound` if there is none."""
    version = versions_by_ref(ref).first()
    if version is None:
        raise NotFound(f"there is no eval set {ref!r}; import the questions first (import_evalset)")
    return version


def run_by_ref(ref: str, *, evalset: str | None = None) -> Run:
    """Return the run named ``ref`` (optionally within ``evalset`` NAME or NAME@V); ``#12`` is an id."""
    qs = Run.objects.select_related("version__eval_set", "judge_config")
    if ref.startswith("#") and ref[1:].isdigit():
        run = qs.filter(pk=int(ref[1:])).first()
        if run is None:
            raise NotFound(f"there is no run with id {ref[1:]}")
        return run
    qs = qs.filter(name=ref)
    if evalset:
        qs = qs.filter(version__in=versions_by_ref(evalset))
    runs = list(qs[:5])
    if not runs:
        where = f" on {evalset}" if evalset else ""
        raise NotFound(f"there is no run named {ref!r}{where}; list runs with the runs page or GET /api/runs/")
    if len(runs) > 1:
        places = ", ".join(r.version.label for r in runs)
        raise NotFound(
            f"run name {ref!r} exists on several eval set versions ({places}); say which with --evalset NAME@VERSION"
        )
    return runs[0]


def evalsets_with_versions() -> QuerySet[EvalSet]:
    return EvalSet.objects.prefetch_related("versions").annotate(version_count=Count("versions"))


def version_runs(version: EvalSetVersion) -> QuerySet[Run]:
    return version.runs.select_related("judge_config").order_by("-created_at")


def runs_list() -> QuerySet[Run]:
    return Run.objects.select_related("version__eval_set", "judge_config", "created_by").order_by("-created_at")


def run_rows(
    run: Run,
    *,
    qtype: str | None = None,
    metric: str | None = None,
    low: float | None = None,
    high: float | None = None,
    search: str | None = None,
) -> QuerySet[Row]:
    """A run's rows, filtered by slice, by a metric's range and by text in the question or answer."""
    rows = Row.objects.filter(run=run).select_related("question").order_by("question__qid")
    if qtype is not None:
        rows = rows.filter(question__qtype="" if qtype == NO_TYPE else qtype)
    if metric:
        # only rows where the metric is defined: JSON null sorts above numbers on SQLite and below them on
        # PostgreSQL, so without this a range would let undefined scores (unanswerable, declined) through
        rows = rows.filter(**{f"scores__{metric}__isnull": False}).exclude(**{f"scores__{metric}": None})
        if low is not None:
            rows = rows.filter(**{f"scores__{metric}__gte": low})
        if high is not None:
            rows = rows.filter(**{f"scores__{metric}__lte": high})
    if search:
        rows = rows.filter(Q(question__text__icontains=search) | Q(answer__icontains=search) | Q(question__qid=search))
    return rows


def runs_on(ref: str | None) -> QuerySet[Run]:
    """Runs, newest first; only those on the eval set (version) ``ref`` names when given."""
    runs = runs_list()
    return runs.filter(version__in=versions_by_ref(ref)) if ref else runs


def run_rows_frame(run: Run, *, metrics: list[str] | None = None) -> pd.DataFrame:
    """Return a run's per-question scores: index question id, a ``type`` column, one column per metric."""
    records = Row.objects.filter(run=run).values_list("question__qid", "question__qtype", "scores")
    qids, types, scores = [], [], []
    for qid, qtype, row_scores in records.iterator(chunk_size=5000):
        qids.append(qid)
        types.append(slice_name(qtype))
        scores.append(row_scores)
    frame = pd.DataFrame(scores, index=pd.Index(qids, name="question"))
    frame = frame.apply(pd.to_numeric, errors="coerce") if len(frame.columns) else frame
    if metrics is not None:
        frame = frame.reindex(columns=metrics)
    frame.insert(0, "type", types)
    return frame.astype({c: float for c in frame.columns if c != "type"})


def comparisons_list() -> QuerySet[Comparison]:
    return Comparison.objects.select_related("base", "candidate", "base__version__eval_set", "created_by")


def changed_rows(comparison: Comparison, metric: str, *, limit: int = 25) -> list[dict[str, Any]]:
    """The questions whose score on ``metric`` changed most between the two runs (both rows each)."""
    base_rows = {r.question_id: r for r in Row.objects.filter(run=comparison.base).select_related("question")}
    out = []
    for cand in Row.objects.filter(run=comparison.candidate, question_id__in=base_rows.keys()).select_related(
        "question"
    ):
        base = base_rows[cand.question_id]
        b, c = base.scores.get(metric), cand.scores.get(metric)
        if b is None or c is None or b == c:
            continue
        out.append(
            {
                "question": cand.question,
                "base": base,
                "candidate": cand,
                "base_score": b,
                "cand_score": c,
                "delta": c - b,
            }
        )
    out.sort(key=lambda item: (-abs(item["delta"]), item["question"].qid))
    return out[:limit]

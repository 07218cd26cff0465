"""Reads: the queries pages, the API and the CLI share."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import orjson
import pandas as pd
from django.db.models import Count, Q, QuerySet, TextField
from django.db.models.functions import Cast

from .models import Comparison, EvalSet, EvalSetVersion, Row, Run
from .selectors_changed import (  # the changed rows' reads, kept in their own module; imported from here as before
    CHANGED_KEPT as CHANGED_KEPT,
)
from .selectors_changed import (
    CHANGED_SHOWN as CHANGED_SHOWN,
)
from .selectors_changed import (
    ChangedRows as ChangedRows,
)
from .selectors_changed import (
    MetricScore as MetricScore,
)
from .selectors_changed import (
    changed_count as changed_count,
)
from .selectors_changed import (
    changed_items as changed_items,
)
from .selectors_changed import (
    changed_rows as changed_rows,
)
from .selectors_changed import (
    changed_rows_list as changed_rows_list,
)
from .selectors_changed import (
    changed_rows_query as changed_rows_query,
)
from .selectors_changed import (
    stored_changes as stored_changes,
)
from .selectors_changed import (
    stored_items as stored_items,
)
from .services.importing import in_batches
from .services.names import parse_version_ref
from .services.problems import UserFacingError
from .services.score_tables import score_table_read
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
    # the version filter lets the database walk the questions' (version, qid) index in order and stop after a
    # page, instead of sorting every row of the run (a run's rows always answer its version's questions)
    rows = (
        Row.objects.filter(run=run, question__version_id=run.version_id)
        .select_related("question")
        .order_by("question__qid")
    )
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


#: Rows read at a time by :func:`run_rows_frame` (their scores are parsed in one call per batch).
FRAME_BATCH = 5000


def _json_array(texts: Sequence[str]) -> list[Any]:
    """Parse JSON texts as one array in one call: orjson, several times faster than json at 100,000 rows (json
    for what orjson refuses, such as NaN). Scores become floats either way, so orjson reading an integer beyond
    64 bits as a float changes nothing here."""
    joined = "[" + ",".join(texts) + "]"
    try:
        return orjson.loads(joined)
    except orjson.JSONDecodeError:
        return json.loads(joined)


def run_rows_frame(run: Run, *, metrics: Sequence[str] | None = None, row_ids: bool = False) -> pd.DataFrame:
    """Return a run's per-question scores: index question id, a ``type`` column, one column per metric.

    With ``row_ids`` a ``row`` column holds each row's id. Rows come in the order of their
    questions' ids, so a bootstrap over them draws the same numbers whatever the query plan.
    Given ``metrics``, they are read from the run's score table (:mod:`.services.score_tables`)
    when it has one. Otherwise the scores come as JSON text and are parsed a batch at a time in one
    call (per-row decoding through the ORM cost seconds at 100,000 rows).
    """
    if metrics is not None:
        kept = score_table_read(run, metrics=list(metrics), row_ids=row_ids)
        if kept is not None:
            return kept
    records = (
        Row.objects.filter(run=run)
        .order_by("question_id")
        .values_list("pk", "question__qid", "question__qtype", Cast("scores", TextField()))
    )
    pks: list[int] = []
    qids: list[str] = []
    types: list[str] = []
    parts: list[Any] = []
    names = list(metrics) if metrics is not None else None
    for chunk in in_batches(records.iterator(chunk_size=FRAME_BATCH), FRAME_BATCH):
        chunk_pks, chunk_qids, chunk_types, texts = zip(*chunk)
        pks.extend(chunk_pks)
        qids.extend(chunk_qids)
        types.extend(slice_name(t) for t in chunk_types)
        scores = _json_array(texts)
        if names is None:
            parts.append(pd.DataFrame(scores))
        else:
            # scores are numbers or None (checked at import): None and a missing metric become NaN
            parts.append(pd.DataFrame(scores, columns=names).to_numpy(dtype=float).reshape(-1, len(names)))
    index = pd.Index(qids, name="question", dtype=object)
    if names is None:
        frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
        frame = frame.apply(pd.to_numeric, errors="coerce") if len(frame.columns) else frame
    else:
        values = np.concatenate(parts) if parts else np.empty((0, len(names)))
        frame = pd.DataFrame(values, index=index, columns=names)
    frame.index = index
    frame.insert(0, "type", types)
    if row_ids:
        frame.insert(1, "row", np.array(pks, dtype=np.int64))
    return frame.astype({c: float for c in frame.columns if c not in ("type", "row")})


def comparisons_list() -> QuerySet[Comparison]:
    return Comparison.objects.select_related("base", "candidate", "base__version__eval_set", "created_by")

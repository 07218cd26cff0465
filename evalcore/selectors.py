"""Reads: the queries pages, the API and the CLI share."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from django.db.models import Count, F, FilteredRelation, FloatField, Func, Q, QuerySet, TextField
from django.db.models.functions import Abs, Cast

from .models import Comparison, EvalSet, EvalSetVersion, Row, Run
from .services.importing import in_batches
from .services.names import parse_version_ref
from .services.problems import UserFacingError
from .services.score_tables import score_table_columns, score_table_read
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


class MetricScore(Func):
    """A row's score on one metric as a float, NULL where it is undefined, read in the database.

    Django's key transforms turn a JSON null into the text 'null' on SQLite (cast to 0.0), so this
    reads the key the way each database means it: ``JSON_EXTRACT`` on SQLite, ``->>`` on PostgreSQL.
    """

    output_field = FloatField()

    def __init__(self, metric: str, field: str = "scores") -> None:
        self.metric = metric
        super().__init__(F(field))

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:
        sql, params = compiler.compile(self.source_expressions[0])
        return f"JSON_EXTRACT({sql}, %s)", [*params, "$." + json.dumps(self.metric)]

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:
        sql, params = compiler.compile(self.source_expressions[0])
        return f"CAST(({sql} ->> %s) AS double precision)", [*params, self.metric]


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


#: The changed questions a comparison keeps per metric and direction (largest drops, largest rises): enough
#: for the first page of the changed-rows list, which is then read without sorting the runs.
CHANGED_KEPT = 100
#: The changed questions the comparison page shows, each with both rows.
CHANGED_SHOWN = 25


def changed_rows(comparison: Comparison, metric: str, *, limit: int = CHANGED_SHOWN) -> list[dict[str, Any]]:
    """The questions whose score on ``metric`` changed most between the two runs (both rows each).

    Read from what the comparison kept when it was made (the largest drops and rises, see
    :func:`evalcore.services.comparisons.compare_runs`): one query for the rows, whatever the runs'
    size. A comparison logged before they were kept reads the same from the database, sorted there.
    """
    entries = stored_changes(comparison, metric, limit=limit)
    if entries is None:
        return changed_items(comparison, list(changed_rows_query(comparison, metric)[:limit]))
    return stored_items(entries)


def changed_rows_query(comparison: Comparison, metric: str, *, direction: str = "all") -> QuerySet[Row]:
    """Every question whose ``metric`` changed, as baseline rows sorted in the database (largest change first).

    Each row is annotated with ``base_score``, ``cand_score``, ``delta`` and ``candidate_row`` (the
    candidate's row id), the candidate's row joined on the question; ``direction`` "down" or "up"
    keeps drops or rises only. Paginate it: the sort runs in the database, and only the page's rows
    reach Python.
    """
    rows = (
        Row.objects.filter(run_id=comparison.base_id)
        .annotate(
            paired=FilteredRelation("question__rows", condition=Q(question__rows__run_id=comparison.candidate_id))
        )
        .filter(paired__isnull=False)
        .annotate(
            base_score=MetricScore(metric),
            cand_score=MetricScore(metric, "paired__scores"),
            candidate_row=F("paired__id"),
        )
        .filter(base_score__isnull=False, cand_score__isnull=False)
        .annotate(delta=F("cand_score") - F("base_score"))
        .exclude(delta=0)
    )
    if direction == "down":
        rows = rows.filter(delta__lt=0)
    elif direction == "up":
        rows = rows.filter(delta__gt=0)
    return rows.select_related("question").order_by(Abs("delta").desc(), "question__qid")


class ChangedRows(Sequence):
    """Every question whose ``metric`` changed, as :func:`changed_rows_query` lists them, from the runs' score tables.

    The order (largest change first, ties by question id, as the comparison kept them) is computed
    from the two score tables, columns only (tens of milliseconds at 100,000 rows); a page then
    reads just its own rows by id. So page 100 costs what page 2 costs: no database sort of every
    change, no offset to skip. Nothing is read until a page is: a slice is a lazy page. Items are
    baseline rows annotated as :func:`changed_rows_query` annotates them.
    """

    def __init__(self, comparison: Comparison, metric: str, *, direction: str = "all") -> None:
        self.comparison, self.metric, self.direction = comparison, metric, direction
        self._order: dict[str, np.ndarray] | None = None
        self._query: QuerySet[Row] | None = None  # runs without score tables: sorted in the database

    def order(self) -> dict[str, np.ndarray] | None:
        """The changed questions' row ids and scores, largest change first (read once); None when a run has no
        score table (then the database sorts: :func:`changed_rows_query`)."""
        if self._order is None and self._query is None:
            ids = (self.comparison.base_id, self.comparison.candidate_id)
            tables = score_table_columns(ids, self.metric)
            if any(run_id not in tables for run_id in ids):
                self._query = changed_rows_query(self.comparison, self.metric, direction=self.direction)
                return None
            base, cand = tables[ids[0]], tables[ids[1]]
            # the questions both runs scored (tables are in question id order)
            _, at_b, at_c = np.intersect1d(
                base.column("question").to_numpy(),
                cand.column("question").to_numpy(),
                assume_unique=True,
                return_indices=True,
            )
            b = base.column(self.metric).to_numpy()[at_b]
            c = cand.column(self.metric).to_numpy()[at_c]
            with np.errstate(invalid="ignore"):
                delta = c - b
            keep = np.isfinite(delta) & (delta != 0)
            if self.direction == "down":
                keep &= delta < 0
            elif self.direction == "up":
                keep &= delta > 0
            at_b, at_c = at_b[keep], at_c[keep]
            # largest change first, ties by question id in code point order (UTF-8 bytes), as the comparison kept them
            ranking = pa.table({"size": -np.abs(delta[keep]), "qid": base.column("qid").take(pa.array(at_b))})
            order = pc.sort_indices(ranking, sort_keys=[("size", "ascending"), ("qid", "ascending")]).to_numpy()
            self._order = {
                "base_row": base.column("row").to_numpy()[at_b][order],
                "candidate_row": cand.column("row").to_numpy()[at_c][order],
                "base": b[keep][order],
                "candidate": c[keep][order],
                "delta": delta[keep][order],
            }
        return self._order

    def __len__(self) -> int:
        order = self.order()
        return len(order["delta"]) if order is not None else self._query.order_by().count()  # type: ignore[union-attr]

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return _LazyPage(self, index)
        return self.rows(range(len(self))[index : index + 1 or None])[0]

    def page(self, index: slice) -> list[Row]:
        """The baseline rows of a slice, annotated."""
        order = self.order()
        if order is None:
            return list(self._query[index])  # type: ignore[index]
        return self.rows(range(len(order["delta"]))[index])

    def rows(self, span: range) -> list[Row]:
        """The baseline rows at positions ``span``, annotated (one query)."""
        order = self.order()
        if order is None:
            return [self._query[i] for i in span]  # type: ignore[index]
        ids = [int(order["base_row"][i]) for i in span if i < len(order["delta"])]
        paired = [int(order["candidate_row"][i]) for i in span if i < len(order["delta"])]
        rows = Row.objects.select_related("question").in_bulk(ids + paired)  # both runs' rows in one query
        page = []
        for i, pk, other in zip(span, ids, paired):
            row = rows[pk]
            row.candidate_object = rows[other]  # type: ignore[attr-defined]
            row.base_score, row.cand_score = float(order["base"][i]), float(order["candidate"][i])  # type: ignore[attr-defined]
            row.delta, row.candidate_row = float(order["delta"][i]), int(order["candidate_row"][i])  # type: ignore[attr-defined]
            page.append(row)
        return page


class _LazyPage(Sequence):
    """A slice of :class:`ChangedRows`, read when first used (a first page answered from what the comparison
    kept never is)."""

    def __init__(self, changes: ChangedRows, index: slice) -> None:
        self.changes, self.index = changes, index
        self._rows: list[Row] | None = None

    def _loaded(self) -> list[Row]:
        if self._rows is None:
            self._rows = self.changes.page(self.index)
        return self._rows

    def __len__(self) -> int:
        return len(self._loaded())

    def __getitem__(self, index: Any) -> Any:
        return self._loaded()[index]


def changed_rows_list(comparison: Comparison, metric: str, *, direction: str = "all") -> Sequence[Row]:
    """Every question whose ``metric`` changed, largest first, to paginate (:class:`ChangedRows`: from the score
    tables, flat in depth, or sorted in the database for runs without them); nothing is read until a page is."""
    return ChangedRows(comparison, metric, direction=direction)


def stored_changes(comparison: Comparison, metric: str, *, direction: str = "all", limit: int) -> list[dict] | None:
    """The ``limit`` largest changes on ``metric`` from what the comparison kept, or None when it kept too few to say.

    The comparison keeps the ``CHANGED_KEPT`` largest drops and rises, so any ``limit`` up to that
    is answered exactly (the largest changes either way are among them).
    """
    stored = (comparison.changed or {}).get(metric)
    if stored is None or limit > stored.get("kept", 0):
        return None
    entries = {"down": stored["down"], "up": stored["up"]}.get(direction, stored["down"] + stored["up"])
    return sorted(entries, key=lambda e: (-abs(e["delta"]), e["question"]))[:limit]


def stored_items(entries: Sequence[dict]) -> list[dict[str, Any]]:
    """Items of a changed-rows list from kept entries, with both rows (one query)."""
    rows = Row.objects.select_related("question").in_bulk(
        [e["base_row"] for e in entries] + [e["candidate_row"] for e in entries]
    )
    return [
        {
            "question": rows[e["base_row"]].question,
            "base": rows[e["base_row"]],
            "candidate": rows[e["candidate_row"]],
            "base_score": e["base"],
            "cand_score": e["candidate"],
            "delta": e["delta"],
        }
        for e in entries
        if e["base_row"] in rows and e["candidate_row"] in rows
    ]


def changed_count(
    comparison: Comparison, metric: str, *, direction: str = "all", changes: Sequence[Row] | None = None
) -> int:
    """How many questions changed on ``metric`` (in ``direction``): kept with the comparison, else counted from the
    score tables or in the database (``changes``: the list :func:`changed_rows_list` gave, so it is read once)."""
    stored = (comparison.changed or {}).get(metric)
    if stored is not None and direction == "all":
        return int(stored["count"])
    if stored is not None and len(stored[direction]) < stored["kept"]:  # every change that way is kept
        return len(stored[direction])
    return len(changes if changes is not None else changed_rows_list(comparison, metric, direction=direction))


def changed_items(comparison: Comparison, base_rows: Sequence[Row]) -> list[dict[str, Any]]:
    """Items of a changed-rows list from :func:`changed_rows_query`'s baseline rows, with their candidate rows (one query)."""
    candidates = {r.candidate_row: r.candidate_object for r in base_rows if hasattr(r, "candidate_object")}  # type: ignore[attr-defined]
    missing = [r.candidate_row for r in base_rows if r.candidate_row not in candidates]  # type: ignore[attr-defined]
    if missing:
        candidates.update(Row.objects.in_bulk(missing))
    return [
        {
            "question": r.question,
            "base": r,
            "candidate": candidates[r.candidate_row],  # type: ignore[attr-defined]
            "base_score": r.base_score,  # type: ignore[attr-defined]
            "cand_score": r.cand_score,  # type: ignore[attr-defined]
            "delta": r.delta,  # type: ignore[attr-defined]
        }
        for r in base_rows
    ]

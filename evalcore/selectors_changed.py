"""Reads of the questions that changed between a comparison's two runs: the comparison page's few, and the
changed-rows list, a page at a time, from the order kept in blocks (:mod:`evalcore.services.changed_order`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from django.db.models import F, FilteredRelation, FloatField, Func, Q, QuerySet
from django.db.models.functions import Abs

from .models import ChangedRowsBlock, ChangedRowsOrder, Comparison, Row
from .models.changes import DIRECTIONS
from .services.changed_order import ENTRY, keep_changed_order, pack, unpack
from .services.score_tables import score_table_columns


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
    """Every question whose ``metric`` changed, as :func:`changed_rows_query` lists them, from the order kept in blocks.

    The order (largest change first, ties by question id, as the comparison kept them) never changes: the
    runs are frozen. The first time a list is read it is computed from the two score tables (:meth:`order`)
    and kept in the database in blocks (:func:`~evalcore.services.changed_order.keep_changed_order`); after
    that its length is the kept header's count and a page reads the header, the block(s) it spans and its
    own rows by id: flat in depth and in the runs' size. Nothing is read until a page is: a slice is a lazy
    page. Items are baseline rows annotated as :func:`changed_rows_query` annotates them. Runs without score
    tables are sorted in the database, as before.
    """

    def __init__(self, comparison: Comparison, metric: str, *, direction: str = "all") -> None:
        if direction not in DIRECTIONS:
            raise ValueError(f"direction is one of {DIRECTIONS}, not {direction!r}")
        self.comparison, self.metric, self.direction = comparison, metric, direction
        self._order: dict[str, np.ndarray] | None = None  # computed here (by this request's build)
        self._packed: np.ndarray | None = None
        self._kept: ChangedRowsOrder | None = None
        self._query: QuerySet[Row] | None = None  # runs without score tables: sorted in the database

    def order(self) -> dict[str, np.ndarray] | None:
        """The changed questions' row ids and scores, largest change first, computed from both runs' score tables
        (what :meth:`kept` builds the kept order from, once); None when a run has no score table (then the
        database sorts: :func:`changed_rows_query`)."""
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

    def kept(self) -> ChangedRowsOrder | None:
        """The kept order's header, built the first time it is asked for (read once); None when a run has no score
        table."""
        if self._kept is None and self._query is None:
            self._kept = ChangedRowsOrder.objects.filter(
                comparison=self.comparison, metric=self.metric, direction=self.direction
            ).first()
            if self._kept is None and self.order() is not None:
                self._kept = keep_changed_order(self.comparison, self.metric, self.direction, self.order())  # type: ignore[arg-type]
        return self._kept

    def entries(self, span: range) -> np.ndarray:
        """The kept entries at positions ``span`` (within the list): from the block(s) they fall in, one query."""
        kept = self.kept()
        assert kept is not None
        if not len(span):
            return np.empty(0, dtype=ENTRY)
        low, high = min(span), max(span)
        if self._order is not None:  # built by this request: already in memory
            self._packed = pack(self._order) if self._packed is None else self._packed
            entries = self._packed[low : high + 1]
        else:
            first, last = low // kept.block_size, high // kept.block_size
            blocks = ChangedRowsBlock.objects.filter(order=kept, block__gte=first, block__lte=last).order_by("block")
            entries = unpack(list(blocks.values_list("data", flat=True)))[low - first * kept.block_size :]
        return entries[[i - low for i in span]]

    def __len__(self) -> int:
        kept = self.kept()
        return kept.count if kept is not None else self._query.order_by().count()  # type: ignore[union-attr]

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return _LazyPage(self, index)
        return self.rows(range(len(self))[index : index + 1 or None])[0]

    def page(self, index: slice) -> list[Row]:
        """The baseline rows of a slice, annotated."""
        if self.kept() is None:
            return list(self._query[index])  # type: ignore[index]
        return self.rows(range(len(self))[index])

    def rows(self, span: range) -> list[Row]:
        """The baseline rows at positions ``span``, annotated (one query for the entries, one for the rows)."""
        if self.kept() is None:
            return [self._query[i] for i in span]  # type: ignore[index]
        entries = self.entries(span)
        ids = [int(pk) for pk in entries["base_row"]]
        paired = [int(pk) for pk in entries["candidate_row"]]
        rows = Row.objects.select_related("question").in_bulk(ids + paired)  # both runs' rows in one query
        page = []
        for entry, pk, other in zip(entries, ids, paired):
            row = rows[pk]
            row.candidate_object = rows[other]  # type: ignore[attr-defined]
            row.base_score, row.cand_score = float(entry["base"]), float(entry["candidate"])  # type: ignore[attr-defined]
            row.delta, row.candidate_row = float(entry["delta"]), other  # type: ignore[attr-defined]
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

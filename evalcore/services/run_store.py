"""A run's rows written: scored a batch at a time, written in bulk, their scores kept as the run's score table,
its summary computed from that table (the write step of :func:`.runs.run_import`).

Memory holds one batch: rows go to the database (``COPY`` on PostgreSQL, sent from a thread while the next
batch is read and scored, see :mod:`.bulk_copy`; one ``executemany`` a batch on SQLite) and their scores to the
score table's temporary file; the summary is then computed from that table a column at a time and the table
is stored streamed from its file (see :func:`.score_tables.store_score_table`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import ExitStack
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
import pyarrow.parquet as pq
from django.db import connection

from evalcore.engine import ChunkMap

from ..models import Row, Run
from .bulk_copy import BackgroundCopy, copy_payload, copy_statement
from .importing import allocate_ids, foreign_keys_checked_as_written, in_batches, insert_values
from .run_questions import QuestionIndex
from .score_tables import ScoreTableWriter, store_score_table
from .scoring import QuestionInfo, score_rows
from .summaries import order_metrics, slice_name, summarize_columns

#: The columns :func:`store_rows` writes, in the order of its value tuples.
ROW_FIELDS = (
    "run",
    "question",
    "retrieved",
    "context_ids",
    "context",
    "answer",
    "declined",
    "claims",
    "scores",
    "metadata",
)


#: Row ids taken from the sequence at a time on PostgreSQL: the first block, doubled at each refill up to
#: ``ID_BLOCK_MAX`` (what the last block has left is not used: fewer ids than the import wrote, or the cap).
ID_BLOCK = 4_000
ID_BLOCK_MAX = 16_000


class _RowWriter:
    """Write batches of row values and return the rows' ids: on PostgreSQL ids from the sequence and ``COPY`` from
    a thread (:class:`.bulk_copy.BackgroundCopy`); elsewhere an ``executemany`` and the ids read back.

    On PostgreSQL a batch's ``COPY`` is held until the next query, the next batch's question lookup, so that it
    runs while that batch is scored; ids come from the sequence a block at a time, as a query for each batch's
    ids would wait for the ``COPY`` in flight."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.last_pk = 0
        self.copy: BackgroundCopy | None = None
        self.statement, self.encoders = "", []
        self.spare_ids: list[int] = []
        self.spare_at = 0
        self.block = ID_BLOCK
        self.stack = ExitStack()

    def __enter__(self) -> _RowWriter:
        if connection.vendor == "postgresql":
            self.statement, self.encoders = copy_statement(Row, ("id", *ROW_FIELDS))
            self.stack.enter_context(foreign_keys_checked_as_written(Row))
            self.copy = self.stack.enter_context(BackgroundCopy())
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stack.__exit__(kind, error, trace)

    def write(self, values: list[tuple[Any, ...]], questions: list[int]) -> list[int]:
        if self.copy is None:
            insert_values(Row, ROW_FIELDS, values)
            row_ids, self.last_pk = _new_row_ids(self.run, after=self.last_pk, expected=questions)
            return row_ids
        allocated = self._ids(len(values))
        rows = [(pk, *v) for pk, v in zip(allocated, values)]
        try:
            payload = copy_payload(self.encoders, rows)
        except UnicodeEncodeError:  # a lone surrogate in a text: written (or refused) as before, by psycopg
            self.copy.wait()
            insert_values(Row, ("id", *ROW_FIELDS), rows)
            return allocated
        self.copy.hold(self.statement, payload)
        return allocated

    def _ids(self, count: int) -> list[int]:
        if self.spare_at + count > len(self.spare_ids):
            rest = self.spare_ids[self.spare_at :]
            block = allocate_ids(Row, max(self.block, count - len(rest)))
            assert block is not None
            self.spare_ids, self.spare_at = rest + block, 0
            self.block = min(2 * self.block, ID_BLOCK_MAX)
        taken = self.spare_ids[self.spare_at : self.spare_at + count]
        self.spare_at += count
        return taken


def store_rows(
    run: Run,
    rows: Iterable[dict[str, Any]],
    index: QuestionIndex,
    *,
    chunk_map: ChunkMap | None,
    progress: Callable[[int], None] = lambda written: None,
    cutoffs: list[int] | None = None,
    batch_size: int = 2000,
) -> None:
    """Score rows (as :func:`~.run_rows.normalize_row` gives them) in batches, write them, then the run's count,
    score table and summary (see the module's docstring)."""
    table = ScoreTableWriter()
    try:
        gold_counts = {"unanswerable": 0, "no_gold": 0, "no_relevant_gold": 0}
        written = 0
        with _RowWriter(run) as writer:
            for batch in in_batches(rows, batch_size):
                infos = _questions_of(batch, index)
                computed = score_rows(batch, infos, k=run.k, gain=run.gain, chunk_map=chunk_map, cutoffs=cutoffs or ())
                values = []
                merged_scores = []
                for row, info, scores in zip(batch, infos, computed):
                    merged, metadata = _merge_scores(row, scores)
                    values.append(
                        (
                            run.pk,
                            info.pk,
                            row["retrieved"],
                            row["context_ids"] or [],
                            row["context"],
                            row["answer"],
                            row["declined"],
                            row["claims"],
                            merged,
                            metadata,
                        )
                    )
                    merged_scores.append(merged)
                    kind = gold_kind(info)
                    gold_counts[kind] = gold_counts.get(kind, 0) + 1
                question_pks = [info.pk for info in infos]
                row_ids = writer.write(values, question_pks)
                written += len(values)
                table.add(
                    questions=question_pks,
                    rows=row_ids,
                    qids=[info.qid for info in infos],
                    types=[slice_name(info.qtype) for info in infos],
                    scores=merged_scores,
                )
                progress(written)
        run.row_count = written
        stored = table.write_parquet()
        run.summary = {
            **table_summary(stored, k=run.k, metrics=table.metrics, questions_per_slice=index.per_slice),
            "retrieval_gold": {kind: n for kind, n in gold_counts.items() if kind != "relevant"},
            **({"cutoffs": sorted({run.k, *cutoffs})} if cutoffs else {}),
        }
        store_score_table(run, stored, row_count=written)
    finally:
        table.close()
    run.save(update_fields=["row_count", "summary"])


def _questions_of(batch: list[dict[str, Any]], index: QuestionIndex) -> list[QuestionInfo]:
    """Each row's question: as the check step found it, else looked up (one query for the batch)."""
    known = {row["qid"]: row["_question"] for row in batch if "_question" in row}
    missing = [row["qid"] for row in batch if row["qid"] not in known]
    if missing:
        known.update(index.lookup(missing))
    return [known[row["qid"]] for row in batch]


def _new_row_ids(run: Run, *, after: int, expected: list[int]) -> tuple[list[int], int]:
    """The ids of the rows just written on SQLite (ids above ``after``: this transaction alone writes the run's rows,
    and ids only grow; the run's index holds them in id order, so this is a range read), in the order of
    ``expected`` (their questions' ids); and the highest of them."""
    written = dict(Row.objects.filter(run=run, pk__gt=after).order_by().values_list("question_id", "pk"))
    if len(written) != len(expected) or any(pk not in written for pk in expected):
        raise ValueError(f"the rows written for run {run.name} do not match the batch")
    return [written[pk] for pk in expected], max(written.values(), default=after)


def table_summary(path: Path, *, k: int, metrics: list[str], questions_per_slice: dict[str, int]) -> dict[str, Any]:
    """The run's summary (means and intervals per slice) from its score table, read one metric at a time."""
    parquet = pq.ParquetFile(path)
    ordered = order_metrics(set(metrics), k)
    types = parquet.read(columns=["type"]).column("type").combine_chunks().dictionary_encode()
    names = [str(name) for name in types.dictionary.to_pylist()]
    order = np.argsort(np.array(names, dtype=object)) if names else np.array([], dtype=np.int64)
    rank = np.empty(len(names), dtype=np.int32)  # four bytes a row: at a million rows every copy counts
    rank[order] = np.arange(len(names))
    codes = rank[types.indices.to_numpy(zero_copy_only=False)] if names else np.array([], dtype=np.int32)
    del types

    def column(metric: str) -> np.ndarray:
        values = parquet.read(columns=[metric]).column(metric).to_numpy(zero_copy_only=False)
        return np.asarray(values, dtype=float)  # float64 already: no copy

    return summarize_columns(
        codes, [names[i] for i in order], column, metrics=ordered, questions_per_slice=questions_per_slice
    )


def gold_kind(question: QuestionInfo) -> str:
    """How a question's gold lets retrieval be scored (see the engine's conventions)."""
    if not question.answerable:
        return "unanswerable"  # NaN, scored on abstention
    if not question.gold:
        return "no_gold"  # NaN: nothing to score retrieval against
    for entry in question.gold:
        if float(entry["grade"]) > 0:
            return "relevant"
    return "no_relevant_gold"  # judged, nothing relevant: 0, kept in the means


def _merge_scores(
    row: dict[str, Any], computed: dict[str, float | None]
) -> tuple[dict[str, float | None], dict[str, Any]]:
    """Merge computed and imported scores; computed retrieval metrics and claim-level faithfulness win."""
    metadata = dict(row["metadata"])
    if row.get("context_chunks"):
        metadata["context_chunks"] = row["context_chunks"]
    merged = dict(row["scores"])
    overridden = {}
    for name, value in computed.items():
        if (
            name == "faithfulness"
            and value is None
            and merged.get("faithfulness") is not None
            and not row["claims"]
            and not row["declined"]
        ):
            continue  # a judge score imported without its claims is kept as imported
        if name in merged and merged[name] != value:
            overridden[name] = merged[name]
        merged[name] = value
    if overridden:
        metadata["imported_scores"] = overridden
    return merged, metadata

"""A run's scores kept as columns (Parquet) beside its rows, so that a gate reads them without decoding JSON.

Written once by :func:`~.runs.store_rows`, in the import's transaction, from the scores it has
already computed; read by :func:`evalcore.selectors.run_rows_frame`. The table holds, per row, the
question's id, the row's id, the question's ``qid`` and slice (``type``) and one float column per metric (NaN where the
row has no value), in the order of the question ids.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..models import Row, Run, RunScoreTable

#: The columns before the metrics.
KEY_COLUMNS = ("question", "row", "qid", "type")


def score_table_write(
    *, run: Run, questions: Sequence[int], qids: Sequence[str], types: Sequence[str], scores: pd.DataFrame
) -> RunScoreTable:
    """Store ``scores`` (one row per question, in the order of ``questions``) as the run's score table."""
    if not (len(questions) == len(qids) == len(types) == len(scores)):
        raise ValueError("a score table needs one question id, qid, type and scores row per row")
    frame = scores.reset_index(drop=True).astype(float)
    frame.insert(0, "question", np.asarray(questions, dtype=np.int64))
    frame.insert(1, "qid", pd.array(qids, dtype=object))
    frame.insert(2, "type", pd.array(types, dtype=object))
    frame = frame.sort_values("question", kind="stable")
    # the rows' ids, known once they are written (one query, so that no gate has to read them)
    ids = Row.objects.filter(run=run).order_by("question_id").values_list("question_id", "pk")
    ids = np.array(ids, dtype=np.int64).reshape(-1, 2)
    if not np.array_equal(ids[:, 0], frame["question"].to_numpy()):
        raise ValueError(f"the scores of run {run.name} do not match its rows")
    frame.insert(1, "row", ids[:, 1])
    schema = pa.schema(
        [("question", pa.int64()), ("row", pa.int64()), ("qid", pa.string()), ("type", pa.string())]
        + [(str(name), pa.float64()) for name in frame.columns[len(KEY_COLUMNS) :]]
    )
    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(frame, schema=schema, preserve_index=False), buffer, compression="zstd")
    return RunScoreTable.objects.create(run=run, row_count=len(frame), data=buffer.getvalue())


def score_table_read(run: Run, *, metrics: Sequence[str], row_ids: bool) -> pd.DataFrame | None:
    """``metrics`` of the run as :func:`~evalcore.selectors.run_rows_frame` returns them, or None without a table."""
    stored = RunScoreTable.objects.filter(run=run).values_list("row_count", "data").first()
    if stored is None:
        return None
    row_count, data = stored
    parquet = pq.ParquetFile(io.BytesIO(bytes(data)))
    present = set(parquet.schema_arrow.names) - set(KEY_COLUMNS)
    if not set(KEY_COLUMNS) <= set(parquet.schema_arrow.names):
        return None  # not a table this version wrote: read the rows
    table = parquet.read(columns=[*KEY_COLUMNS, *(m for m in dict.fromkeys(metrics) if m in present)])
    if table.num_rows != row_count:
        return None
    matrix = np.full((table.num_rows, len(metrics)), np.nan)  # a metric no row has is NaN, as in the rows
    for position, name in enumerate(metrics):
        if name in present:
            matrix[:, position] = table.column(name).to_numpy(zero_copy_only=False)
    index = pd.Index(table.column("qid").to_pylist(), name="question", dtype=object)
    frame = pd.DataFrame(matrix, index=index, columns=list(metrics))
    frame.insert(0, "type", table.column("type").to_pylist())
    if row_ids:
        frame.insert(1, "row", table.column("row").to_numpy())
    return frame


def score_table_columns(runs: Sequence[int], metric: str) -> dict[int, pa.Table]:
    """The ``question``, ``row``, ``qid`` and ``metric`` (NaN when no row has it) columns of the runs' tables, as Arrow,
    by run id (one query; a run without a table is left out).

    Columns only, no Python objects: what a list sorted over every question (the changed rows) reads.
    """
    tables: dict[int, pa.Table] = {}
    for run_id, row_count, data in RunScoreTable.objects.filter(run_id__in=list(runs)).values_list(
        "run_id", "row_count", "data"
    ):
        parquet = pq.ParquetFile(io.BytesIO(bytes(data)))
        names = set(parquet.schema_arrow.names)
        if not {"question", "row", "qid"} <= names:
            continue
        present = [metric] if metric in names - set(KEY_COLUMNS) else []
        table = parquet.read(columns=["question", "row", "qid", *present])
        if table.num_rows != row_count:
            continue
        if not present:
            table = table.append_column(metric, pa.array(np.full(table.num_rows, np.nan)))
        tables[run_id] = table
    return tables

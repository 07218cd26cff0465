"""A run's scores kept as columns (Parquet) beside its rows, so that a gate reads them without decoding JSON.

Written once, in the import's transaction, by :class:`ScoreTableWriter` from the scores
:func:`~.run_store.store_rows` has already computed, a batch at a time: each batch goes to a temporary
file, so the import's memory does not grow with the run (only the finished table, compressed, is
held to be stored). Read by :func:`evalcore.selectors.run_rows_frame`. The table holds, per row, the
question's id, the row's id, the question's ``qid`` and slice (``type``) and one float column per metric (NaN where the
row has no value). It is written in the file's order; :func:`score_table_read` returns it in the order of the
question ids (tables written before kept that order on disk).
"""

from __future__ import annotations

import binascii
import io
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from django.db import connection

from ..models import Run, RunScoreTable

#: The columns before the metrics.
KEY_COLUMNS = ("question", "row", "qid", "type")


class ScoreTableWriter:
    """Build a run's score table a batch at a time, in constant memory; :meth:`finish` stores it.

    Each :meth:`add` writes its batch to a temporary Arrow file (the metrics a batch has may differ
    from the next one's: imported scores are free-form); :meth:`finish` writes them as one Parquet
    table whose columns are every metric seen, in the order first seen, NaN where a row has none.
    """

    def __init__(self) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="lsl-scores-")
        self._segments: list[Path] = []
        self.metrics: list[str] = []
        self._known: set[str] = set()
        self.rows = 0

    def add(
        self,
        *,
        questions: Sequence[int],
        rows: Sequence[int],
        qids: Sequence[str],
        types: Sequence[str],
        scores: Sequence[dict[str, float | None]],
    ) -> None:
        """Add one batch: per row its question's id, its own id, the qid, the slice and its merged scores."""
        if not (len(questions) == len(rows) == len(qids) == len(types) == len(scores)):
            raise ValueError("a score table needs one question id, row id, qid, type and scores per row")
        for row_scores in scores:
            for name in row_scores:
                if name not in self._known:
                    self._known.add(name)
                    self.metrics.append(name)
        names = [name for name in self.metrics if any(name in row_scores for row_scores in scores)]
        columns = {
            "question": pa.array(questions, pa.int64()),
            "row": pa.array(rows, pa.int64()),
            "qid": pa.array(qids, pa.string()),
            "type": pa.array(types, pa.string()),
        }
        for name in names:
            values = np.array([row_scores.get(name) for row_scores in scores], dtype=float)  # None is NaN
            columns[str(name)] = pa.array(values, pa.float64())
        segment = Path(self._folder.name) / f"{len(self._segments):06d}.arrow"
        table = pa.table(columns)
        with pa.OSFile(str(segment), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        self._segments.append(segment)
        self.rows += len(questions)

    def schema(self) -> pa.Schema:
        return pa.schema(
            [("question", pa.int64()), ("row", pa.int64()), ("qid", pa.string()), ("type", pa.string())]
            + [(str(name), pa.float64()) for name in self.metrics]
        )

    def write_parquet(self) -> Path:
        """Write the batches as one Parquet file (a row group a batch) and return its path."""
        schema = self.schema()
        target = Path(self._folder.name) / "scores.parquet"
        with pq.ParquetWriter(str(target), schema, compression="zstd") as writer:
            for segment in self._segments:
                with pa.memory_map(str(segment)) as source:
                    table = pa.ipc.open_file(source).read_all()
                missing = [f for f in schema if f.name not in table.column_names]
                for f in missing:
                    table = table.append_column(f.name, pa.array(np.full(table.num_rows, np.nan)))
                writer.write_table(table.select(schema.names))
                segment.unlink()
        self._segments = []
        return target

    def close(self) -> None:
        self._folder.cleanup()


#: How much of a score table's file is read at a time when it is stored.
STORE_BLOCK = 1 << 20


def store_score_table(run: Run, path: Path, *, row_count: int) -> None:
    """Store the run's score table from its file, streamed: the import's memory holds a block of it, not the table
    (at a million rows the table and the copies the database driver made of it were the import's peak).

    PostgreSQL takes the row by ``COPY`` (the column in ``bytea``'s hex form, a block at a time); SQLite by an
    ``INSERT`` of a zero-filled blob of the file's size, then written through its incremental blob I/O.
    """
    meta = RunScoreTable._meta
    quote = connection.ops.quote_name
    table = quote(meta.db_table)
    columns = [quote(meta.get_field(name).column) for name in ("run", "row_count", "data")]
    size = path.stat().st_size
    with path.open("rb") as source, connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                copy.write(b"%d\t%d\t\\\\x" % (run.pk, row_count))
                for block in iter(lambda: source.read(STORE_BLOCK), b""):
                    copy.write(binascii.hexlify(block))
                copy.write(b"\n")
            return
        if connection.vendor != "sqlite":
            RunScoreTable.objects.create(run=run, row_count=row_count, data=source.read())
            return
        cursor.execute(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES (%s, %s, zeroblob(%s))", [run.pk, row_count, size]
        )
        rowid = cursor.lastrowid
        with connection.connection.blobopen(meta.db_table, columns[2].strip('"'), rowid, readonly=False) as blob:
            for block in iter(lambda: source.read(STORE_BLOCK), b""):
                blob.write(block)


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
    questions = table.column("question").to_numpy()
    if questions.size > 1 and not bool(np.all(questions[1:] >= questions[:-1])):
        table = table.sort_by("question")  # written in the file's order: rows come in the order of their questions
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

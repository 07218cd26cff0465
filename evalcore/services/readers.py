"""Streaming readers for the import formats: one record (a dict) at a time, with its line number.

JSON Lines, CSV and Parquet stream in batches, so memory does not grow with the file. TREC qrels
and run files are grouped by topic, which needs the whole file; they are usually small.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .problems import ImportFailed, ImportProblem

FORMATS = ("jsonl", "csv", "parquet", "ragas", "trec-qrels", "trec-run")
BATCH = 2000


@dataclass(frozen=True)
class Record:
    line: int
    data: dict[str, Any]


def detect_format(path: Path, declared: str | None = None) -> str:
    """Return the format named, or the one the file's extension implies."""
    if declared:
        if declared not in FORMATS:
            raise ImportFailed(
                [ImportProblem(path.name, None, None, f"unknown format {declared!r}; use one of {', '.join(FORMATS)}")]
            )
        return declared
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    if suffix in (".csv", ".tsv"):
        return "csv"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    if suffix in (".qrels",) or path.name.startswith("qrels"):
        return "trec-qrels"
    raise ImportFailed(
        [
            ImportProblem(
                path.name,
                None,
                None,
                f"cannot tell the format from the extension {suffix!r}; name it with --format ({', '.join(FORMATS)})",
            )
        ]
    )


def container_of(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        return "csv"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    return "jsonl"


def count_records(path: Path, fmt: str) -> int | None:
    """Return how many records the file holds (for progress), cheaply, or None if unknown."""
    container = container_of(path) if fmt == "ragas" else fmt
    try:
        if container == "parquet":
            import pyarrow.parquet as pq

            return pq.ParquetFile(path).metadata.num_rows
        if container in ("jsonl", "csv"):
            count = 0
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    count += block.count(b"\n")
            return max(0, count - (1 if container == "csv" else 0))
    except (OSError, ValueError):  # pyarrow's ArrowInvalid is a ValueError: the reader reports it with the file name
        return None
    return None


def read_records(path: Path, fmt: str, display_name: str) -> Iterator[Record]:
    """Yield the file's records; malformed syntax raises :class:`ImportFailed` with its line."""
    container = container_of(path) if fmt == "ragas" else fmt
    if container == "jsonl":
        yield from _read_jsonl(path, display_name)
    elif container == "csv":
        yield from _read_csv(path, display_name)
    elif container == "parquet":
        yield from _read_parquet(path, display_name)
    else:
        raise ValueError(f"read_records does not read {fmt}; use the TREC readers")


def _read_jsonl(path: Path, name: str) -> Iterator[Record]:
    with path.open("r", encoding="utf-8", errors="strict", newline="") as handle:
        line_no = 0
        try:
            for raw in handle:
                line_no += 1
                text = raw.strip()
                if not text:
                    continue
                try:
                    data = json.loads(text)
                except json.JSONDecodeError as error:
                    raise ImportFailed(
                        [
                            ImportProblem(
                                name,
                                line_no,
                                None,
                                f"malformed JSON: {error.msg} (column {error.colno}); each line must be one JSON object",
                            )
                        ]
                    ) from None
                if not isinstance(data, dict):
                    raise ImportFailed(
                        [
                            ImportProblem(
                                name,
                                line_no,
                                None,
                                f"each line must be a JSON object {{...}}, got {type(data).__name__}",
                            )
                        ]
                    )
                yield Record(line_no, data)
        except UnicodeDecodeError as error:
            raise ImportFailed(
                [ImportProblem(name, line_no + 1, None, f"not UTF-8 text ({error.reason}); save the file as UTF-8")]
            ) from None


def _read_csv(path: Path, name: str) -> Iterator[Record]:
    import pandas as pd

    sep = "\t" if path.suffix.lower() == ".tsv" else ","
    try:
        reader = pd.read_csv(
            path, sep=sep, dtype=str, keep_default_na=False, chunksize=BATCH, encoding="utf-8", on_bad_lines="error"
        )
        row = 0
        for frame in reader:
            columns = [str(c).strip() for c in frame.columns]
            for values in frame.itertuples(index=False, name=None):
                row += 1
                yield Record(row + 1, dict(zip(columns, values)))
    except pd.errors.EmptyDataError:
        return
    except pd.errors.ParserError as error:
        raise ImportFailed([ImportProblem(name, None, None, f"malformed CSV: {error}")]) from None
    except UnicodeDecodeError as error:
        raise ImportFailed(
            [ImportProblem(name, None, None, f"not UTF-8 text ({error.reason}); save the file as UTF-8")]
        ) from None


def _read_parquet(path: Path, name: str) -> Iterator[Record]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as error:
        raise ImportFailed([ImportProblem(name, None, None, f"not a readable Parquet file: {error}")]) from None
    row = 0
    for batch in parquet.iter_batches(batch_size=BATCH):
        for data in batch.to_pylist():
            row += 1
            yield Record(row, data)


@dataclass
class _TrecTopic:
    line: int  # where the topic first appears
    columns: list[str]  # the columns of that first line
    docs: dict[str, Any]  # docno -> the line's value (a grade or a score), in file order


def _read_trec_topics(
    path: Path,
    name: str,
    *,
    kind: str,
    layout: str,
    value: str,
    parse: Callable[[str], Any],
    must_be: str,
    repeated: str,
) -> dict[str, _TrecTopic]:
    """Read a whitespace-separated TREC file whose lines hold the columns of ``layout``, grouped by topic (the first column).

    ``value`` names the column read with ``parse`` (a ValueError says it ``must be`` so); the
    document is the third column, and a document ``repeated`` twice for a topic is refused.
    """
    columns = layout.split()
    at = columns.index(value)
    topics: dict[str, _TrecTopic] = {}
    with path.open("r", encoding="utf-8") as handle:
        for line_no, raw in enumerate(handle, start=1):
            parts = raw.split()
            if not parts:
                continue
            if len(parts) != len(columns):
                raise ImportFailed(
                    [
                        ImportProblem(
                            name,
                            line_no,
                            None,
                            f"a {kind} line has {len(columns)} columns ({layout}), got {len(parts)}",
                        )
                    ]
                )
            qid, doc, text = parts[0], parts[2], parts[at]
            try:
                parsed = parse(text)
            except ValueError:
                raise ImportFailed(
                    [ImportProblem(name, line_no, value, f"{value} must be {must_be}, got {text!r}")]
                ) from None
            topic = topics.setdefault(qid, _TrecTopic(line_no, parts, {}))
            if doc in topic.docs:
                raise ImportFailed(
                    [ImportProblem(name, line_no, "docno", f"document {doc!r} is {repeated} twice for topic {qid}")]
                )
            topic.docs[doc] = parsed
    return topics


def read_trec_qrels(path: Path, name: str) -> Iterator[Record]:
    """Yield one record per topic: ``{"id", "gold": [{"doc", "grade"}]}`` (format: ``qid 0 docno grade``)."""
    topics = _read_trec_topics(
        path,
        name,
        kind="qrels",
        layout="qid iteration docno grade",
        value="grade",
        parse=int,
        must_be="an integer",
        repeated="judged",
    )
    for qid, topic in topics.items():
        yield Record(topic.line, {"id": qid, "gold": [{"doc": d, "grade": g} for d, g in topic.docs.items()]})


def read_trec_run(path: Path, name: str) -> Iterator[Record]:
    """Yield one row per topic, its documents ranked as trec_eval ranks them.

    TREC run lines are ``qid Q0 docno rank score runid``. trec_eval ignores the rank column and
    sorts by score, descending, breaking ties by docno, descending; we do the same so our
    numbers match the field's reference tool. A topic's run id is the one on its first line.
    """
    topics = _read_trec_topics(
        path,
        name,
        kind="run",
        layout="qid Q0 docno rank score runid",
        value="score",
        parse=float,
        must_be="a number",
        repeated="retrieved",
    )
    for qid, topic in topics.items():
        ranked = sorted(topic.docs.items(), key=lambda item: (item[1], item[0]), reverse=True)
        yield Record(topic.line, {"id": qid, "retrieved": [d for d, _ in ranked], "trec_run_id": topic.columns[5]})


#: The TREC formats: their reader, what the file is called, what it holds and the command that imports it.
_TREC: dict[str, tuple[Callable[[Path, str], Iterator[Record]], str, str, str]] = {
    "trec-qrels": (read_trec_qrels, "qrels", "gold judgments", "import_evalset"),
    "trec-run": (read_trec_run, "TREC run", "a run's rows", "import_run"),
}


def read_import(path: Path, fmt: str, name: str, *, trec: str, holding: str) -> Iterator[Record]:
    """Return the records of a file imported as ``holding`` (questions, a run's rows).

    The TREC format ``trec`` is read by topic; the other TREC format is refused at once, with the
    command that imports it; every other format streams through :func:`read_records`.
    """
    if fmt == trec:
        return _TREC[fmt][0](path, name)
    if fmt in _TREC:
        _, called, holds, command = _TREC[fmt]
        raise ImportFailed(
            [ImportProblem(name, None, None, f"a {called} file holds {holds}, not {holding}; import it with {command}")]
        )
    return read_records(path, fmt, name)

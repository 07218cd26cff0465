"""Streaming readers for the import formats: one record (a dict) at a time, with its line number.

JSON Lines, CSV and Parquet stream in batches, so memory does not grow with the file. TREC qrels
and run files are grouped by topic, which needs the whole file; they are usually small.
"""

from __future__ import annotations

import codecs
import csv
import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .fields import FieldError, check_depth, checked_text, parse_json_object
from .limits import limits
from .problems import ImportFailed, ImportProblem, ProblemCollector

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


def read_records(path: Path, fmt: str, display_name: str, *, problems: ProblemCollector) -> Iterator[Record]:
    """Yield the file's records, each with its line (its row in Parquet).

    What cannot be read is added to ``problems`` with its line (malformed JSON, a line that is not
    UTF-8 or is too long, a CSV line with too many cells) and passed over, so that one file
    reports every problem it has, up to the cap; what makes the rest of the file unreadable (a
    corrupt Parquet page, more records than ``IMPORT_MAX_ROWS``) ends the reading with a problem.
    """
    container = container_of(path) if fmt == "ragas" else fmt
    if container == "jsonl":
        records = _read_jsonl(path, display_name, problems)
    elif container == "csv":
        records = _read_csv(path, display_name, problems)
    elif container == "parquet":
        records = _read_parquet(path, display_name, problems)
    else:
        raise ValueError(f"read_records does not read {fmt}; use the TREC readers")
    yield from _within_row_limit(records, problems)


def _within_row_limit(records: Iterator[Record], problems: ProblemCollector) -> Iterator[Record]:
    limit = limits()
    for count, record in enumerate(records, start=1):
        if count > limit.rows:
            problems.add(record.line, None, limit.message(f"the file holds more than {limit.rows:,} records", "rows"))
            return
        yield record


def text_lines(path: Path, name: str, problems: ProblemCollector) -> Iterator[tuple[int, str]]:
    """Yield ``(line number, text)`` for each line of a UTF-8 text file, reading at most a line at a time.

    The one byte order mark rule of every text format: a UTF-8 byte order mark at the start of the
    file is skipped (spreadsheets write one); a UTF-16 or UTF-32 one refuses the file (save it as
    UTF-8). A line that is not UTF-8, or longer than ``IMPORT_MAX_LINE_BYTES`` (its excess is
    skipped, never held), is added to ``problems`` with its own number and passed over.
    """
    limit = limits()
    with path.open("rb") as handle:
        head = handle.read(4)
        wide = next((bom for bom in _WIDE_BOMS if head.startswith(bom)), None)
        if wide is not None:
            problems.add(
                None, None, f"is {_WIDE_BOMS[wide]} text (it starts with its byte order mark); save it as UTF-8"
            )
            return
        handle.seek(3 if head.startswith(codecs.BOM_UTF8) else 0)
        line_no = 0
        while True:
            raw = handle.readline(limit.line_bytes + 1)
            if not raw:
                return
            line_no += 1
            if len(raw) > limit.line_bytes and not raw.endswith(b"\n"):
                while (rest := handle.readline(1 << 20)) and not rest.endswith(b"\n"):
                    pass
                problems.add(
                    line_no, None, limit.message(f"the line is longer than {limit.line_bytes:,} bytes", "line_bytes")
                )
            else:
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    problems.add(
                        line_no,
                        None,
                        f"not UTF-8 text (byte 0x{raw[error.start]:02x} at byte {error.start + 1} of the line); "
                        "save the file as UTF-8",
                    )
                else:
                    yield line_no, text
                    continue
            if problems.full:
                problems.truncated = True
                return


_WIDE_BOMS = {
    codecs.BOM_UTF32_LE: "UTF-32",
    codecs.BOM_UTF32_BE: "UTF-32",
    codecs.BOM_UTF16_LE: "UTF-16",
    codecs.BOM_UTF16_BE: "UTF-16",
}


def _read_jsonl(path: Path, name: str, problems: ProblemCollector) -> Iterator[Record]:
    depth = limits().depth
    for line_no, raw in text_lines(path, name, problems):
        text = raw.strip()
        if not text:
            continue
        try:
            data = json.loads(text)
            # a value cannot nest deeper than it has opening brackets: most lines need no walk
            if text.count("[") + text.count("{") > depth:
                check_depth(data)
        except json.JSONDecodeError as error:
            problems.add(
                line_no, None, f"malformed JSON: {error.msg} (column {error.colno}); each line must be one JSON object"
            )
            continue
        except (RecursionError, FieldError):
            problems.add(line_no, None, limits().message("the JSON nests objects and arrays too deeply", "depth"))
            continue
        if not isinstance(data, dict):
            problems.add(line_no, None, f"each line must be a JSON object {{...}}, got {type(data).__name__}")
            continue
        yield Record(line_no, data)


#: A CSV cell that a spreadsheet would run as a formula is written with a leading apostrophe
#: (OWASP's rule, see :mod:`.spreadsheets`); reading it back drops the apostrophe.
_ESCAPED_CELL = re.compile(r"^'(?=[=+\-@\t\r])")


def _read_csv(path: Path, name: str, problems: ProblemCollector) -> Iterator[Record]:
    lines = _NumberedLines(text_lines(path, name, problems))
    sep = "\t" if path.suffix.lower() == ".tsv" else ","
    csv.field_size_limit(max(csv.field_size_limit(), limits().line_bytes))
    reader = csv.reader(lines, delimiter=sep, strict=True)
    header: list[str] | None = None
    while True:
        lines.start = None
        try:
            values = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            problems.add(lines.start or lines.current, None, f"malformed CSV: {error}")
            if problems.full:
                problems.truncated = True
                return
            continue
        if not values or values == [""]:
            continue
        line = lines.start or lines.current
        if header is None:
            header = [value.strip() for value in values]
            repeated = next((c for i, c in enumerate(header) if c and c in header[:i]), None)
            if repeated is not None:
                problems.add(line, repeated, f"the header names column {repeated!r} twice")
                return
            continue
        if len(values) > len(header):
            problems.add(line, None, f"the line has {len(values)} cells but the header names {len(header)} columns")
            continue
        data = {}
        for column, value in zip(header, values):
            if column:
                data[column] = _ESCAPED_CELL.sub("", value)
            elif value.strip():
                problems.add(line, None, "a cell stands under a column with no name in the header; name the column")
        yield Record(line, data)


class _NumberedLines:
    """The lines of a file for :mod:`csv`, remembering the number of the first line of the current record."""

    def __init__(self, lines: Iterator[tuple[int, str]]) -> None:
        self.lines = lines
        self.start: int | None = None
        self.current = 0

    def __iter__(self) -> _NumberedLines:
        return self

    def __next__(self) -> str:
        number, text = next(self.lines)
        if self.start is None:
            self.start = number
        self.current = number
        return text


def _read_parquet(path: Path, name: str, problems: ProblemCollector) -> Iterator[Record]:
    """Stream a Parquet file's rows, once its metadata shows it decompresses within the limits."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    unreadable = (pa.ArrowException, OSError, ValueError)
    try:
        parquet = pq.ParquetFile(path)
    except unreadable as error:
        problems.add(None, None, f"not a readable Parquet file ({_reason(error, path, name)})")
        return
    if not _parquet_within_limits(parquet.metadata, problems):
        return
    row = 0
    try:
        for batch in parquet.iter_batches(batch_size=BATCH):
            for data in batch.to_pylist():
                row += 1
                yield Record(row, data)
    except unreadable as error:
        problems.add(row + 1, None, f"the Parquet file cannot be read from this row on ({_reason(error, path, name)})")


def _parquet_within_limits(metadata: Any, problems: ProblemCollector) -> bool:
    """Check a Parquet file's decompressed size from its metadata, before any page is decoded.

    The whole file's data must fit ``IMPORT_MAX_DECOMPRESSED_BYTES``; a row group must average at
    most ``IMPORT_MAX_LINE_BYTES`` a row (as a JSON Lines line must), or some row is longer.
    """
    limit = limits()
    total, first = 0, 1
    for index in range(metadata.num_row_groups):
        group = metadata.row_group(index)
        size, rows = group.total_byte_size, max(group.num_rows, 1)
        total += size
        if size > rows * limit.line_bytes:
            problems.add(
                first,
                None,
                limit.message(
                    f"row group {index + 1} (rows {first} to {first + rows - 1}) decompresses to {size:,} bytes: "
                    f"some row is longer than {limit.line_bytes:,} bytes",
                    "line_bytes",
                ),
            )
            return False
        first += group.num_rows
    if total > limit.decompressed_bytes:
        problems.add(None, None, limit.message(f"its data decompresses to {total:,} bytes", "decompressed_bytes"))
        return False
    return True


def _reason(error: Exception, path: Path, name: str) -> str:
    """An Arrow error's message, with the server's path of the file replaced by the file's name."""
    return str(error).replace(str(path), name).strip() or type(error).__name__


@dataclass
class _TrecTopic:
    line: int  # where the topic first appears
    columns: list[str]  # the columns of that first line
    docs: dict[str, Any]  # docno -> the line's value (a grade or a score), in file order


def _read_trec_topics(
    path: Path,
    name: str,
    problems: ProblemCollector,
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
    document is the third column, and a document ``repeated`` twice for a topic is refused. Every
    malformed line is added to ``problems`` with its number.
    """
    columns = layout.split()
    at = columns.index(value)
    topics: dict[str, _TrecTopic] = {}
    for line_no, raw in text_lines(path, name, problems):
        if problems.full:
            problems.truncated = True
            break
        parts = raw.split()
        if not parts:
            continue
        if len(parts) != len(columns):
            problems.add(line_no, None, f"a {kind} line has {len(columns)} columns ({layout}), got {len(parts)}")
            continue
        qid, doc, text = parts[0], parts[2], parts[at]
        try:
            parsed = parse(text)
        except ValueError:
            problems.add(line_no, value, f"{value} must be {must_be}, got {text[:40]!r}")
            continue
        try:
            checked_text(qid, "qid")
            checked_text(doc, "docno")
        except FieldError as error:
            problems.add(line_no, error.field, error.message)
            continue
        topic = topics.setdefault(qid, _TrecTopic(line_no, parts, {}))
        if doc in topic.docs:
            problems.add(line_no, "docno", f"document {doc!r} is {repeated} twice for topic {qid}")
            continue
        topic.docs[doc] = parsed
        if len(topics) > limits().rows:
            problems.add(line_no, None, limits().message(f"the file holds more than {limits().rows:,} topics", "rows"))
            break
    return topics


def _finite(text: str) -> float:
    """A TREC score: a finite number (ValueError otherwise)."""
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(text)
    return number


def read_trec_qrels(path: Path, name: str, problems: ProblemCollector) -> Iterator[Record]:
    """Yield one record per topic: ``{"id", "gold": [{"doc", "grade"}]}`` (format: ``qid 0 docno grade``)."""
    topics = _read_trec_topics(
        path,
        name,
        problems,
        kind="qrels",
        layout="qid iteration docno grade",
        value="grade",
        parse=int,
        must_be="an integer",
        repeated="judged",
    )
    for qid, topic in topics.items():
        yield Record(topic.line, {"id": qid, "gold": [{"doc": d, "grade": g} for d, g in topic.docs.items()]})


def read_trec_run(path: Path, name: str, problems: ProblemCollector) -> Iterator[Record]:
    """Yield one row per topic, its documents ranked as trec_eval ranks them.

    TREC run lines are ``qid Q0 docno rank score runid``. trec_eval ignores the rank column and
    sorts by score, descending, breaking ties by docno, descending; we do the same so our
    numbers match the field's reference tool. A topic's run id is the one on its first line.
    """
    topics = _read_trec_topics(
        path,
        name,
        problems,
        kind="run",
        layout="qid Q0 docno rank score runid",
        value="score",
        parse=_finite,
        must_be="a number (finite)",
        repeated="retrieved",
    )
    for qid, topic in topics.items():
        ranked = sorted(topic.docs.items(), key=lambda item: (item[1], item[0]), reverse=True)
        yield Record(topic.line, {"id": qid, "retrieved": [d for d, _ in ranked], "trec_run_id": topic.columns[5]})


#: The TREC formats: their reader, what the file is called, what it holds and the command that imports it.
_TREC: dict[str, tuple[Callable[[Path, str, ProblemCollector], Iterator[Record]], str, str, str]] = {
    "trec-qrels": (read_trec_qrels, "qrels", "gold judgments", "import_evalset"),
    "trec-run": (read_trec_run, "TREC run", "a run's rows", "import_run"),
}


def read_import(
    path: Path, fmt: str, name: str, *, trec: str, holding: str, problems: ProblemCollector
) -> Iterator[Record]:
    """Return the records of a file imported as ``holding`` (questions, a run's rows).

    The TREC format ``trec`` is read by topic; the other TREC format is refused at once, with the
    command that imports it; every other format streams through :func:`read_records`.
    """
    if fmt == trec:
        return _TREC[fmt][0](path, name, problems)
    if fmt in _TREC:
        _, called, holds, command = _TREC[fmt]
        raise ImportFailed(
            [ImportProblem(name, None, None, f"a {called} file holds {holds}, not {holding}; import it with {command}")]
        )
    return read_records(path, fmt, name, problems=problems)


def read_json_object_file(path: Path, what: str) -> dict[str, Any]:
    """A JSON object from a file (a judge or system config), read by the rules of every text input.

    The byte order mark rule of :func:`text_lines`, UTF-8, finite numbers and the nesting limit;
    :class:`ImportFailed` names the file and, for malformed JSON, the line.
    """
    problems = ProblemCollector(path.name)
    if not path.is_file():
        problems.add(None, None, f"no such file ({what})")
        problems.raise_if_any()
    text = "".join(raw for _, raw in text_lines(path, path.name, problems))
    problems.raise_if_any()
    try:
        return parse_json_object(text, what)
    except FieldError as error:
        problems.add(None, None, f"the {what} {error.message}")
        problems.raise_if_any()
        raise

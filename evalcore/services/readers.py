"""Streaming readers for the import formats: one record (a dict) at a time, with its line number.

JSON Lines, CSV and Parquet stream in batches, so memory does not grow with the file; a JSON array
(or an object wrapping one) is read wherever JSON Lines is (see :mod:`.json_documents`). TREC
files are read in :mod:`.trec`. The format comes from the name given, the extension and the
content (:func:`detect_format`).
"""

from __future__ import annotations

import codecs
import csv
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from .fields import FieldError, check_depth, parse_json_object
from .json_documents import first_record, is_json_document, read_json_document
from .limits import limits
from .problems import ImportFailed, ImportProblem, ProblemCollector
from .records import Record
from .tool_formats import DOOR_COMMANDS, TOOLS, identify
from .tools import huggingface, inspect_logs, ir_collections

#: Containers: what the file is made of. A tool's export is read from its container, then adapted.
CONTAINERS = ("jsonl", "json", "csv", "parquet")
TREC_FORMATS = ("trec-qrels", "trec-run", "msmarco-run")
# once each (msmarco-run is a tool and a TREC format): the API's enum is named by this exact list
FORMATS = tuple(dict.fromkeys((*CONTAINERS, *TOOLS, *TREC_FORMATS)))
BATCH = 2000
_RUN_SUFFIXES = (".res", ".run", ".trec")


def detect_format(
    path: Path, declared: str | None = None, *, door: str | None = None, display: str | None = None
) -> str:
    """Return the format of a file: the one named, else what its extension and content say.

    With ``door`` (``questions``, ``run`` or ``labels``: what the import takes), the file's field
    names are checked too: a tool's export is read as that tool's format when none was named, and
    refused with the format (or command) to use when it was read as another, never imported wrong.
    """
    name = display or path.name
    if declared and declared not in FORMATS:
        raise _refused(name, f"unknown format {declared!r}; use one of {', '.join(FORMATS)}")
    given = declared
    if declared == "json":
        declared = "jsonl"
    if declared in TREC_FORMATS:
        return declared
    base = _format_from_name(path) or _format_from_text(path)
    _check_container(path, name, declared)
    if base is None and declared:
        return declared  # named: its reader reports what it cannot read, line by line
    if base is None:
        raise _refused(
            name,
            f"cannot tell the format from the extension {path.suffix.lower()!r} or the content; "
            f"name it with --format ({', '.join(FORMATS)})",
        )
    if base in TREC_FORMATS or door is None:
        return declared or base
    return _tool_format(path, name, base=base, declared=declared, given=given, door=door)


def _tool_format(path: Path, name: str, *, base: str, declared: str | None, given: str | None, door: str) -> str:
    """The format of a JSON, CSV or Parquet file by its field names: a tool's export as that tool's, refused
    when the door does not take it or another format was named."""
    tool = identify(first_keys(path))
    if tool is None and base == "parquet" and huggingface.has_dataset_schema(path):
        tool = "huggingface"
    if base in ("inspect", "huggingface") and tool in (None, base):
        return base if declared in (None, base) else _container_named(name, base, declared)
    if tool is None or declared == tool:
        return declared or base
    info = TOOLS[tool]
    if not info.doors:
        raise _refused(name, f"this looks like {info.called}, which holds {info.holds}; {info.instead}")
    if door not in info.doors:
        command = DOOR_COMMANDS[info.doors[0]]
        raise _refused(
            name,
            f"this looks like {info.called}, which holds {info.holds}; import it with {command} --format {tool}",
        )
    if declared:
        raise _refused(
            name, f"this looks like {info.called}, not {_CALLED.get(given or '', given)}; use --format {tool}"
        )
    return tool


#: The containers in words, as a refusal names the one asked for.
_CALLED = {"jsonl": "JSON Lines", "json": "JSON", "csv": "CSV", "parquet": "Parquet"}
_PARQUET_MAGIC = b"PAR1"


def _check_container(path: Path, name: str, declared: str | None) -> None:
    """Refuse a file named as Parquet that is not one, or a Parquet file named as text (JSON, CSV)."""
    if declared not in ("parquet", "jsonl", "csv"):
        return
    try:
        with path.open("rb") as handle:
            head = handle.read(4)
    except OSError:
        return
    if declared == "parquet" and head != _PARQUET_MAGIC:
        kind = _format_from_text(path)
        seen = {"jsonl": "JSON text", "trec-run": "a TREC run", "trec-qrels": "TREC qrels"}.get(kind or "", "text")
        raise _refused(name, f"is not a Parquet file (it holds {seen}, and Parquet files start with 'PAR1'); "
                       "drop --format parquet, or name the format it is in")  # fmt: skip
    if declared != "parquet" and head == _PARQUET_MAGIC:
        raise _refused(name, f"is a Parquet file, not {_CALLED[declared]}; use --format parquet")


def _container_named(name: str, base: str, declared: str | None) -> str:
    """An Inspect log or an Arrow file named as another format: refused, with the format it is."""
    raise _refused(
        name, f"this is {TOOLS[base].called}, not {_CALLED.get(declared or '', declared)}; use --format {base}"
    )


def _refused(name: str, message: str) -> ImportFailed:
    return ImportFailed([ImportProblem(name, None, None, message)])


def _format_from_name(path: Path) -> str | None:
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    if suffix == ".tsv":
        return _tsv_format(path)
    if suffix == ".csv":
        return "csv"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    if suffix == ".eval":
        return "inspect"
    if suffix == ".arrow":
        return "huggingface"
    if suffix == ".qrels" or path.name.startswith("qrels"):
        return "trec-qrels"
    if suffix in _RUN_SUFFIXES:
        return "trec-run"
    return None


def _tsv_format(path: Path) -> str:
    """A TSV: MS MARCO's headerless qrels, runs and queries by their first line; else a table with a header."""
    first = _first_line(path)
    kind = ir_collections.tsv_kind(first)
    if kind == "topics":
        raise _refused(
            path.name,
            "holds queries (qid<TAB>text lines): give them with --topics beside the qrels, as MS MARCO's queries file",
        )
    return kind or "csv"


def _first_line(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            first = next((line for line in iter(lambda: handle.readline(1 << 16), b"") if line.strip()), b"")
    except OSError:
        return ""
    return first.decode("utf-8", errors="replace").lstrip("\ufeff")


def _format_from_text(path: Path) -> str | None:
    """JSON, a TREC run (``qid Q0 docno rank score runid``) or qrels (``qid 0 docno grade``) from the first line."""
    text = _first_line(path).strip()
    if text[:1] in ("{", "["):
        return "jsonl"
    parts = text.split()
    try:
        if len(parts) == 6:
            int(parts[3]), float(parts[4])
            return "trec-run"
        if len(parts) == 4:
            int(parts[3])
            return "trec-qrels"
    except ValueError:
        return None
    return None


def first_keys(path: Path) -> list[str]:
    """The field names of a file's first record (a CSV header, Parquet columns, the first JSON object)."""
    container = container_of(path)
    quiet = ProblemCollector(path.name)
    try:
        if container == "inspect":
            return inspect_logs.first_sample_keys(path)
        if container == "arrow":
            return huggingface.first_arrow_keys(path)
        if container == "parquet":
            import pyarrow.parquet as pq

            return list(pq.read_schema(path).names)
        if container == "csv":
            for _, raw in text_lines(path, path.name, quiet):
                if raw.strip():
                    return [cell.strip() for cell in next(csv.reader([raw], delimiter=_separator(path)))]
            return []
        if is_json_document(path):
            with path.open("rb") as handle:
                head = handle.read(1 << 20).decode("utf-8", errors="ignore").lstrip("\ufeff")
            early = first_record(head)
            if early is not None:
                return list(early)
        first = next(_read_jsonl(path, path.name, quiet), None)
        return list(first.data) if first else []
    except (OSError, ValueError, csv.Error, StopIteration):
        return []  # the reader reports what is wrong with the file, with its line


def container_of(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        return "csv"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    if suffix == ".eval":
        return "inspect"
    if suffix == ".arrow":
        return "arrow"
    return "jsonl"


def _separator(path: Path) -> str:
    return "\t" if path.suffix.lower() == ".tsv" else ","


def count_records(path: Path, fmt: str) -> int | None:
    """Return how many records the file holds (for progress), cheaply, or None if unknown."""
    container = container_of(path) if fmt in TOOLS else ("jsonl" if fmt == "json" else fmt)
    try:
        if container in ("inspect", "arrow"):
            return None
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
    container = container_of(path) if fmt in TOOLS else ("jsonl" if fmt == "json" else fmt)
    if container == "jsonl":
        records = _read_jsonl(path, display_name, problems)
    elif container == "csv":
        records = _read_csv(path, display_name, problems)
    elif container == "parquet":
        records = _read_parquet(path, display_name, problems)
    elif container == "inspect":
        records = inspect_logs.read_eval_file(path, display_name, problems)
    elif container == "arrow":
        records = huggingface.read_arrow(path, display_name, problems)
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
    if is_json_document(path):
        yield from _read_json_document(path, name, problems)
        return
    depth = limits().depth
    for line_no, raw in text_lines(path, name, problems):
        text = raw.strip()
        if not text:
            continue
        try:
            try:
                data = orjson.loads(text)  # several times faster; what it refuses is read by json, as before
            except orjson.JSONDecodeError:
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


def _read_json_document(path: Path, name: str, problems: ProblemCollector) -> Iterator[Record]:
    """The records of a JSON array (or of an object wrapping one), by the text rules of every format.

    The document is held whole: pandas writes a whole array on one line, so the line limit cannot
    bound it; its size is bounded by ``IMPORT_MAX_DECOMPRESSED_BYTES`` instead.
    """
    limit = limits()
    size = path.stat().st_size
    if size > limit.decompressed_bytes:
        problems.add(None, None, limit.message(f"the JSON document is {size:,} bytes", "decompressed_bytes"))
        return
    raw = path.read_bytes()
    wide = next((bom for bom in _WIDE_BOMS if raw.startswith(bom)), None)
    if wide is not None:
        problems.add(None, None, f"is {_WIDE_BOMS[wide]} text (it starts with its byte order mark); save it as UTF-8")
        return
    start = 3 if raw.startswith(codecs.BOM_UTF8) else 0
    try:
        text = raw[start:].decode("utf-8")
    except UnicodeDecodeError as error:
        at = start + error.start
        line_start = raw.rfind(b"\n", 0, at) + 1
        problems.add(
            raw.count(b"\n", 0, at) + 1,
            None,
            f"not UTF-8 text (byte 0x{raw[at]:02x} at byte {at - line_start + 1} of the line); save the file as UTF-8",
        )
        return
    del raw
    for line_no, data in read_json_document(text, problems):
        if not isinstance(data, dict):
            problems.add(
                line_no, None, f"each record of the array must be a JSON object {{...}}, got {type(data).__name__}"
            )
            continue
        yield Record(line_no, data)


#: A CSV cell that a spreadsheet would run as a formula is written with a leading apostrophe
#: (OWASP's rule, see :mod:`.spreadsheets`); reading it back drops the apostrophe.
_ESCAPED_CELL = re.compile(r"^'(?=[=+\-@\t\r])")


def _read_csv(path: Path, name: str, problems: ProblemCollector) -> Iterator[Record]:
    lines = _NumberedLines(text_lines(path, name, problems))
    sep = _separator(path)
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
        for position, (column, value) in enumerate(zip(header, values)):
            if column:
                data[column] = _ESCAPED_CELL.sub("", value)
            elif position == 0 and len(header) > 1:
                continue  # pandas' to_csv writes its index first, under no name: row numbers, not data
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

"""Inspect AI eval logs: ``.eval`` files (a zip of ``header.json`` and ``samples/*.json``) and JSON logs
(``log_format="json"``: one object whose ``samples`` are the records).

A sample is a question (its ``id``, ``input``, ``target``) and a row (``output.completion``, its
``scores`` by scorer). Score values are numbers, booleans or Inspect's letters (``C`` correct 1,
``I`` incorrect 0, ``P`` partial 0.5, ``N`` no answer 0, as Inspect's ``value_to_float``); a scorer
returning several values (a dict) gives one score each, ``scorer/key``. A log run with several
epochs holds a sample per epoch: the row keeps the first epoch's answer and each score's mean over
the epochs (Inspect's default reducer), every epoch's values in its metadata.
"""

from __future__ import annotations

import json
import struct
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..fields import FieldError, as_text, check_depth, is_blank, json_safe
from ..limits import limits
from ..problems import ProblemCollector
from ..records import Record
from .common import ANSWER_KEYS, an_object, chunks, first, id_in, text_of, verdict_number

SAMPLE_KEYS = {"epoch", "input", "target"}
#: Where a RAG task keeps its retrieval in a sample's metadata.
RETRIEVED_KEYS = ("retrieved_ids", "retrieved", "retrieved_context_ids", "doc_ids")
CONTEXT_KEYS = ("contexts", "context", "retrieved_contexts", "documents")


def is_sample(names: set[str]) -> bool:
    return SAMPLE_KEYS <= names and bool(names & {"scores", "messages", "output"})


def read_eval_file(path: Path, name: str, problems: ProblemCollector) -> Iterator[Record]:
    """The samples of a ``.eval`` log, one record each (its number in the log as its line)."""
    limit = limits()
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as error:
        problems.add(None, None, f"not a readable Inspect .eval log (a zip archive): {error}")
        return
    with archive:
        entries = [e for e in archive.infolist() if e.filename.startswith("samples/") and e.filename.endswith(".json")]
        total = sum(e.file_size for e in archive.infolist())
        if total > limit.decompressed_bytes:
            problems.add(None, None, limit.message(f"the log decompresses to {total:,} bytes", "decompressed_bytes"))
            return
        for number, entry in enumerate(sorted(entries, key=_sample_order), start=1):
            if entry.file_size > limit.line_bytes:
                problems.add(
                    number, None, limit.message(f"sample {entry.filename} is {entry.file_size:,} bytes", "line_bytes")
                )
                continue
            try:
                data = json.loads(_entry_bytes(archive, path, entry).decode("utf-8"))
                check_depth(data)
            except (ValueError, FieldError, RecursionError, OSError) as error:
                problems.add(number, None, f"{entry.filename} is not a readable sample ({str(error)[:100]})")
                continue
            if isinstance(data, dict):
                yield Record(number, data)


#: The zip method number of Zstandard, which Inspect writes its logs with (Python's zipfile reads it from 3.14).
_ZSTD = 93


def _entry_bytes(archive: zipfile.ZipFile, path: Path, entry: zipfile.ZipInfo) -> bytes:
    """An entry's content; a Zstandard one decompressed with pyarrow's codec (already a dependency)."""
    if entry.compress_type != _ZSTD:
        return archive.read(entry)
    import pyarrow as pa

    with path.open("rb") as handle:
        handle.seek(entry.header_offset)
        header = handle.read(30)
        if header[:4] != b"PK\x03\x04":
            raise OSError(f"{entry.filename}: not a zip entry where the archive says")
        name_length, extra_length = struct.unpack("<HH", header[26:30])
        handle.seek(entry.header_offset + 30 + name_length + extra_length)
        compressed = handle.read(entry.compress_size)
    return pa.decompress(compressed, decompressed_size=entry.file_size, codec="zstd").to_pybytes()


def _sample_order(entry: zipfile.ZipInfo) -> tuple[int, str]:
    """Samples in epoch order, then by name: ``samples/q1_epoch_2.json`` after every epoch-1 sample."""
    stem = entry.filename.rsplit("/", 1)[-1].removesuffix(".json")
    base, _, epoch = stem.rpartition("_epoch_")
    return (int(epoch) if epoch.isdigit() else 0, base)


def first_sample_keys(path: Path) -> list[str]:
    """The field names of a ``.eval`` log's first sample (to tell its format)."""
    quiet = ProblemCollector(path.name)
    sample = next(read_eval_file(path, path.name, quiet), None)
    return list(sample.data) if sample else []


def by_question(records: Iterable[Record]) -> Iterator[Record]:
    """One record a sample id: the first epoch's, with each score's mean over the epochs (Inspect's default)."""
    samples: dict[str, list[Record]] = {}
    for record in records:
        samples.setdefault(str(record.data.get("id")), []).append(record)
    for epochs in samples.values():
        if len(epochs) == 1:
            yield epochs[0]
            continue
        epochs.sort(key=lambda r: r.data.get("epoch") or 0)
        data = dict(epochs[0].data)
        data["_epochs"] = [an_object(r.data.get("scores")) for r in epochs]
        yield Record(epochs[0].line, data)


def _input_text(value: Any) -> str:
    """A sample's input: text, or chat messages whose last user message is the question."""
    if isinstance(value, list):
        users = [m for m in value if isinstance(m, dict) and m.get("role") == "user"]
        if not users:
            raise FieldError("input", "holds no user message to take the question from")
        content = users[-1].get("content")
        if isinstance(content, list):
            content = " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
        return as_text(content, "input", required=True)
    return as_text(value, "input", required=True)


def question(data: dict[str, Any]) -> dict[str, Any]:
    """A sample as a plain question: ``id``, ``input``, ``target`` (the first of several as the reference)."""
    metadata = an_object(data.get("metadata"))
    target = data.get("target")
    targets = target if isinstance(target, list) else None
    return {
        "id": data.get("id"),
        "question": _input_text(data.get("input")),
        "reference_answer": text_of(targets[0] if targets else target, "target", ANSWER_KEYS) if target else "",
        "type": str(metadata.get("type") or ""),
        "gold": metadata.get("gold"),
        "metadata": json_safe(
            {
                **{
                    k: v
                    for k, v in metadata.items()
                    if k not in ("type", "gold", *CONTEXT_KEYS, *RETRIEVED_KEYS, "answer")
                },
                **({"targets": targets} if targets and len(targets) > 1 else {}),
            }
        ),
    }


def _score_values(scores: dict[str, Any], where: str) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for name, score in scores.items():
        value = an_object(score).get("value") if isinstance(score, dict) else score
        if isinstance(value, dict):
            for key, part in value.items():
                out[f"{name}/{key}"] = verdict_number(part, f"{where}.{name}.value.{key}")
        elif isinstance(value, list):
            continue  # a list of values has no one number: kept in the metadata
        else:
            out[str(name)] = verdict_number(value, f"{where}.{name}.value")
    return out


def row(data: dict[str, Any]) -> dict[str, Any]:
    """A sample as a plain row: the model's completion, the retrieval in its metadata, a score a scorer."""
    metadata = an_object(data.get("metadata"))
    scores = an_object(data.get("scores"))
    values = _score_values(scores, "scores")
    epochs = data.get("_epochs")
    if epochs:
        per_epoch = [_score_values(s, "scores") for s in epochs]
        for name in values:
            numbers = [e[name] for e in per_epoch if e.get(name) is not None]
            values[name] = sum(numbers) / len(numbers) if numbers else None
    output = an_object(data.get("output"))
    listed = chunks(first(metadata, *CONTEXT_KEYS), "metadata.contexts")
    retrieved = first(metadata, *RETRIEVED_KEYS)
    return {
        "id": data.get("id") if not is_blank(data.get("id")) else id_in(metadata),
        "retrieved": retrieved or [],
        "context_ids": list(retrieved)[: len(listed)] if retrieved and listed else None,
        "context": listed or "",
        "answer": as_text(output.get("completion") or "", "output.completion"),
        "scores": values,
        "inspect_scores": json_safe(
            {
                name: {k: v for k, v in an_object(s).items() if k in ("explanation", "answer")}
                for name, s in scores.items()
            }
        ),
        **({"inspect_epochs": json_safe(epochs)} if epochs else {}),
        **({"inspect_error": json_safe(data["error"])} if not is_blank(data.get("error")) else {}),
    }

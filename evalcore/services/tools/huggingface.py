"""Hugging Face ``datasets``: a dataset saved to disk (``save_to_disk``: Arrow files beside ``state.json``),
one of its ``.arrow`` files, or ``Dataset.to_parquet()`` (a Parquet file whose schema keeps the
dataset's features under ``huggingface``).

Its records are the dataset's rows. Rows in one of our formats or a tool's (a Ragas table) are
read as that; otherwise as the hub's RAG and QA eval sets name their columns: the question in
``question`` or ``query``, the id in ``id``, ``_id``, ``question_id`` or ``query_id``, the
reference in ``reference``, ``ground_truth``, ``answer`` or SQuAD's ``answers.text`` (the first of
several), gold ids in ``gold``, ``gold_ids`` or ``reference_context_ids``; the rest is metadata.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..fields import FieldError, as_text, is_blank, json_safe
from ..limits import limits
from ..problems import ImportFailed, ImportProblem, ProblemCollector
from ..records import Record
from .common import first, text_id

BATCH = 2000
ID_COLUMNS = ("id", "_id", "question_id", "query_id", "qid")
QUESTION_COLUMNS = ("question", "query", "user_input", "input", "prompt")
REFERENCE_COLUMNS = ("reference_answer", "reference", "ground_truth", "ground_truths", "answer", "answers",
                     "correct_answer", "expected_output")  # fmt: skip
GOLD_COLUMNS = ("gold", "gold_ids", "reference_context_ids", "positive_ids")


def is_arrow(path: Path) -> bool:
    return path.suffix.lower() == ".arrow"


def has_dataset_schema(path: Path) -> bool:
    """Whether a Parquet file was written by ``datasets`` (its schema metadata keeps the features)."""
    import pyarrow.parquet as pq

    try:
        metadata = pq.read_schema(path).metadata or {}
    except (OSError, ValueError):
        return False
    return b"huggingface" in metadata


def dataset_file(path: Path) -> Path:
    """The Arrow file of a dataset saved to disk (a folder); a file is itself. A ``DatasetDict`` folder or one
    saved in several shards is refused, saying which folder (split) or file to give."""
    if not path.is_dir():
        return path
    if (path / "dataset_dict.json").is_file():
        splits = json.loads((path / "dataset_dict.json").read_text()).get("splits") or []
        raise ImportFailed([ImportProblem(path.name, None, None, f"is a DatasetDict with splits {', '.join(splits)}; "
                                          f"give one split's folder, e.g. {path.name}/{splits[0] if splits else 'test'}")])  # fmt: skip
    state = path / "state.json"
    if not state.is_file():
        raise ImportFailed([ImportProblem(path.name, None, None, "is a folder but not a dataset saved with save_to_disk (no state.json)")])  # fmt: skip
    files = [path / entry["filename"] for entry in json.loads(state.read_text()).get("_data_files", [])]
    if len(files) != 1:
        raise ImportFailed([ImportProblem(path.name, None, None, f"holds {len(files)} Arrow shards; save it as one "
                                          "file: dataset.to_parquet('questions.parquet')")])  # fmt: skip
    return files[0]


def read_arrow(path: Path, name: str, problems: ProblemCollector) -> Iterator[Record]:
    """Stream an Arrow file's rows (the IPC stream ``datasets`` writes, or the IPC file format)."""
    import pyarrow as pa

    limit = limits()
    size = path.stat().st_size
    if size > limit.decompressed_bytes:
        problems.add(None, None, limit.message(f"the Arrow file is {size:,} bytes", "decompressed_bytes"))
        return
    try:
        source = pa.memory_map(str(path))
        try:
            reader = pa.ipc.open_stream(source)
        except pa.ArrowInvalid:
            source.seek(0)
            reader = pa.ipc.open_file(source)
            batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
        else:
            batches = iter(reader)
        row = 0
        for batch in batches:
            for data in batch.to_pylist():
                row += 1
                yield Record(row, data)
    except (pa.ArrowException, OSError, ValueError) as error:
        problems.add(None, None, f"not a readable Arrow file ({str(error).replace(str(path), name)[:200]})")


def first_arrow_keys(path: Path) -> list[str]:
    import pyarrow as pa

    try:
        with pa.memory_map(str(path)) as source:
            try:
                return list(pa.ipc.open_stream(source).schema.names)
            except pa.ArrowInvalid:
                source.seek(0)
                return list(pa.ipc.open_file(source).schema.names)
    except (pa.ArrowException, OSError, ValueError):
        return []


def _reference(value: Any) -> str:
    """A reference answer: text, the first of a list, or SQuAD's ``{"text": [...]}`` / TriviaQA's ``{"value"}``."""
    if isinstance(value, dict):
        value = value.get("text", value.get("value"))
    if isinstance(value, (list, tuple)):
        value = value[0] if value else ""
    return as_text(value, "answer")


def question(data: dict[str, Any]) -> dict[str, Any]:
    """A row of a hub QA or RAG eval set as a plain question."""
    name = next((c for c in QUESTION_COLUMNS if not is_blank(data.get(c))), None)
    if name is None:
        raise FieldError("question", f"names no question: the dataset needs a column {', '.join(QUESTION_COLUMNS)}")
    text = as_text(data[name], name, required=True)
    reference_column = next((c for c in REFERENCE_COLUMNS if not is_blank(data.get(c))), None)
    gold_column = next((c for c in GOLD_COLUMNS if data.get(c) is not None), None)
    used = {name, reference_column, gold_column, *ID_COLUMNS, "type", "answerable", "tags"}
    return {
        "id": first(data, *ID_COLUMNS) or text_id(text),
        "question": text,
        "reference_answer": _reference(data[reference_column]) if reference_column else "",
        "type": str(data.get("type") or data.get("query_type") or ""),
        "gold": data.get(gold_column) if gold_column else None,
        **({"answerable": data["answerable"]} if "answerable" in data else {}),
        "metadata": json_safe({k: v for k, v in data.items() if k not in used}),
    }

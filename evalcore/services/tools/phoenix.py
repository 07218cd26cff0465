"""Arize Phoenix: span annotations (``client.spans.get_span_annotations_dataframe()``, one row a span and
annotation name) and dataset exports (``Dataset.to_dataframe()`` or the server's CSV download).

Annotations by an ``LLM`` or ``CODE`` annotator are a judge's or a program's: grouped into one row a
question, each annotation name a score (``result.score``, else a label read as a verdict). ``HUMAN``
annotations are people's labels, read by import_labels. An annotation names its question through
the span it annotates: the span's metadata (``question_id``) or its input (the question's text),
joined from the spans dataframe as docs/formats.md shows; an annotation without either is refused
with how to join them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ..fields import FieldError, is_blank, json_safe
from ..records import Record
from .common import ANSWER_KEYS, TEXT_KEYS, an_object, first, id_in, text_id, text_of, verdict_number

ANNOTATION_KEYS = {"annotation_name", "annotator_kind"}
INPUT_COLUMNS = ("attributes.input.value", "input.value", "input")
OUTPUT_COLUMNS = ("attributes.output.value", "output.value", "output")
METADATA_COLUMNS = ("attributes.metadata", "metadata.question_id")
JOIN_HINT = (
    "join the spans dataframe first: annotations.join(spans.set_index('context.span_id')"
    "[['attributes.input.value', 'attributes.output.value', 'attributes.metadata']])"
)


def is_annotations(names: set[str]) -> bool:
    return ANNOTATION_KEYS <= names


def is_dataset(names: set[str]) -> bool:
    flat = {n.split(".", 1)[0] for n in names}
    return {"input", "output", "metadata"} <= flat and (
        "example_id" in names or "node_id" in names or names == {"input", "output", "metadata"}
    )


def result(data: dict[str, Any], key: str) -> Any:
    """An annotation's result field, from the dataframe's ``result.KEY`` column or a nested ``result`` object."""
    if f"result.{key}" in data:
        return data[f"result.{key}"]
    return an_object(data.get("result")).get(key)


def _question_of(data: dict[str, Any]) -> tuple[Any, str | None]:
    """The question an annotation's span names: ``(id, text)``, either may be missing."""
    metadata = an_object(data.get("attributes.metadata"))
    qid = id_in(metadata) or first(data, "metadata.question_id", "question_id")
    text = first(data, *INPUT_COLUMNS)
    return qid, (text_of(text, "attributes.input.value", TEXT_KEYS) if text is not None else None)


def judge_rows(records: Iterable[Record]) -> Iterator[Record]:
    """One row a question from the LLM and CODE annotations of its span; HUMAN ones are left to import_labels."""
    rows: dict[str, dict[str, Any]] = {}
    for record in records:
        data = record.data
        if str(data.get("annotator_kind") or "").upper() == "HUMAN":
            continue
        qid, text = _question_of(data)
        if is_blank(qid) and not text:
            yield Record(record.line, {"_phoenix_error": "span_id"})
            continue
        name = str(data.get("annotation_name") or "").strip()
        if not name:
            yield Record(record.line, {"_phoenix_error": "annotation_name"})
            continue
        key = str(qid) if not is_blank(qid) else f"text:{text}"
        row = rows.setdefault(key, {"line": record.line, "id": qid, "_text": text, "scores": {}, "explanations": {}})
        score = result(data, "score")
        row["scores"][name] = verdict_number(
            score if not is_blank(score) else result(data, "label"), f"result.score ({name})"
        )
        explanation = result(data, "explanation")
        row["explanations"][name] = {
            "label": result(data, "label"),
            "explanation": None if is_blank(explanation) else explanation,
        }
        row.setdefault("answer", first(data, *OUTPUT_COLUMNS))
        row.setdefault("spans", []).append(str(data.get("span_id") or ""))
    for row in rows.values():
        answer = row.get("answer")
        yield Record(
            row["line"],
            {
                "id": row["id"],
                "_text": row["_text"],
                "answer": text_of(answer, "attributes.output.value", ANSWER_KEYS) if answer is not None else "",
                "scores": row["scores"],
                "phoenix_annotations": json_safe(row["explanations"]),
                "phoenix_spans": sorted(set(row["spans"]) - {""}),
            },
        )


def refusal(field: str) -> FieldError:
    if field == "span_id":
        return FieldError(
            "span_id", f"the annotation names no question (no span metadata.question_id nor input): {JOIN_HINT}"
        )
    return FieldError(field, "is missing: an annotation has a name")


def _flat(data: dict[str, Any], prefix: str) -> dict[str, Any]:
    """A dataset column as an object: ``input`` itself, or the server CSV's ``input.KEY`` columns."""
    if prefix in data:
        return an_object(data[prefix]) or ({"text": data[prefix]} if isinstance(data[prefix], str) else {})
    return {k[len(prefix) + 1 :]: v for k, v in data.items() if str(k).startswith(prefix + ".")}


def question(data: dict[str, Any]) -> dict[str, Any]:
    """A dataset example as a plain question: its input's question, output's answer, metadata's id, type and gold."""
    inputs, outputs, metadata = _flat(data, "input"), _flat(data, "output"), _flat(data, "metadata")
    text = text_of(inputs, "input", TEXT_KEYS, required=True)
    gold = metadata.get("gold")
    if isinstance(gold, str) and gold.strip().startswith("["):
        gold = gold  # JSON text in the server's CSV: the gold reader decodes it
    return {
        "id": id_in(metadata) or first(data, "example_id", "id") or text_id(text),
        "question": text,
        "reference_answer": text_of(outputs, "output", ANSWER_KEYS) if outputs else "",
        "type": str(metadata.get("type") or ""),
        "gold": gold,
        "metadata": json_safe(
            {k: v for k, v in metadata.items() if k not in ("type", "gold", "question_id", "id", "qid")}
        ),
    }

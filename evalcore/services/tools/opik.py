"""Opik (Comet): dataset items (``Dataset.to_json()`` or ``to_pandas()``: each item's ``id`` beside its data)
and experiment items (``Experiment.get_items()``: ``dataset_item_id``, ``dataset_item_data``,
``evaluation_task_output``, ``feedback_scores``).

A dataset item is a question whose id is ours when its data carries one (``question_id``), else
Opik's item id; an experiment item names the same question through its item's data, so a run
lands on the eval set its dataset made. Feedback scores are the judge's scores, by name.
"""

from __future__ import annotations

from typing import Any

from ..fields import FieldError, as_list, is_blank, json_safe
from .common import ANSWER_KEYS, TEXT_KEYS, an_object, chunks, first, text_id, text_of, verdict_number

ITEM_KEYS = {"dataset_item_id", "evaluation_task_output", "feedback_scores"}
QUESTION_KEYS = ("question", "input", "query", "user_input", "prompt")
REFERENCE_KEYS = ("expected_output", "expected_answer", "reference", "answer", "ground_truth")
#: Opik's own fields of a dataset item (beside the user's data).
_ITEM_FIELDS = {"id", "trace_id", "span_id", "source", "description", "evaluators", "execution_policy"}


def is_experiment_item(names: set[str]) -> bool:
    return ITEM_KEYS <= names


def question(data: dict[str, Any]) -> dict[str, Any]:
    """A dataset item (or an experiment item's data) as a plain question."""
    if "dataset_item_id" in data:
        data = {**an_object(data.get("dataset_item_data")), "id": data.get("dataset_item_id")}
    name = next((k for k in QUESTION_KEYS if not is_blank(data.get(k))), None)
    if name is None:
        raise FieldError("question", f"the item names no question: give its data a {', '.join(QUESTION_KEYS)}")
    text = text_of(data[name], name, TEXT_KEYS, required=True)
    reference = first(data, *REFERENCE_KEYS)
    own = {name, "question_id", "qid", "type", "gold", *REFERENCE_KEYS[:1]}
    return {
        "id": first(data, "question_id", "qid") or first(data, "id") or text_id(text),
        "question": text,
        "reference_answer": text_of(reference, "expected_output", ANSWER_KEYS) if reference is not None else "",
        "type": str(data.get("type") or ""),
        "gold": data.get("gold"),
        "metadata": json_safe({k: v for k, v in data.items() if k not in own | _ITEM_FIELDS}),
    }


def row(data: dict[str, Any]) -> dict[str, Any]:
    """An experiment item as a plain row: the task's output, its context, each feedback score."""
    item = an_object(data.get("dataset_item_data"))
    output = an_object(data.get("evaluation_task_output"))
    scores: dict[str, float | None] = {}
    reasons: dict[str, Any] = {}
    for i, score in enumerate(as_list(data.get("feedback_scores") or [], "feedback_scores")):
        score = an_object(score)
        name = str(score.get("name") or "").strip()
        if not name:
            raise FieldError(f"feedback_scores[{i}].name", "is missing: a feedback score has a name")
        scores[name] = verdict_number(score.get("value"), f"feedback_scores[{i}].value")
        reasons[name] = {k: score[k] for k in ("reason", "category_name") if not is_blank(score.get(k))}
    listed = chunks(first(output, "context", "contexts", "retrieved_contexts"), "evaluation_task_output.context")
    retrieved = first(output, "retrieved_ids", "retrieved", "retrieved_context_ids")
    question_name = next((k for k in QUESTION_KEYS if not is_blank(item.get(k))), None)
    return {
        "id": first(item, "question_id", "qid") or data.get("dataset_item_id"),
        "_text": text_of(item[question_name], question_name, TEXT_KEYS) if question_name else None,
        "retrieved": retrieved or [],
        "context_ids": list(retrieved)[: len(listed)] if retrieved and listed else None,
        "context": listed or "",
        "answer": text_of(first(output, "output", "answer", "response") or "", "evaluation_task_output", ANSWER_KEYS),
        "scores": scores,
        "opik_feedback": json_safe(reasons),
        "opik_trace_id": data.get("trace_id"),
    }

"""Disagreement exports that a prompt tuner uses as they are: OpenAI's fine-tuning chat JSONL, ``dspy.Example``
records, and a Langfuse dataset upload.

- ``openai``: one ``{"messages": [system, user, assistant]}`` a line and nothing else, as OpenAI's
  fine-tuning file checks require (known roles, a system message first, user and assistant after it,
  the last message the assistant's, no empty content, no other keys).
- ``dspy``: one JSON document ``{"inputs": [...], "examples": [...]}``: each example's fields, and the
  names of its inputs, so ``[dspy.Example(**e).with_inputs(*doc["inputs"]) for e in doc["examples"]]``
  is a trainset; the label (``label``) and its reason (``rationale``) are the outputs.
- ``langfuse``: one dataset item a line, named as Langfuse's ``CreateDatasetItemRequest`` and
  ``Langfuse.create_dataset_item`` name them (``dataset_name``, ``id``, ``input``, ``expected_output``,
  ``metadata``), so ``langfuse.create_dataset_item(**item)`` for each line uploads the dataset; the id
  makes a second upload update the items, not duplicate them.
"""

from __future__ import annotations

import json
from typing import Any

#: The inputs of a dspy example, by campaign unit: a claim campaign asks about a claim, an answer one about the answer.
DSPY_INPUTS = {"claim": ["question", "context", "claim"], "answer": ["question", "context", "answer"]}


def _reason(example: dict[str, Any]) -> str:
    return " ".join(example["human_rationales"]) or (
        "People found this unsupported by the context."
        if example["human_label"] == "unsupported"
        else "People found this supported by the context."
    )


def openai_line(chat: dict[str, Any]) -> dict[str, Any]:
    """A chat example as OpenAI's fine-tuning line: its messages only, every content non-empty."""
    return {"messages": [{"role": m["role"], "content": m["content"]} for m in chat["messages"]]}


def dspy_document(examples: list[dict[str, Any]], *, unit: str) -> dict[str, Any]:
    inputs = DSPY_INPUTS["claim" if unit == "claim" else "answer"]
    return {
        "format": "dspy.Example",
        "inputs": inputs,
        "examples": [
            {
                "question": e["question"],
                "context": e["context"],
                **({"claim": e["claim"]} if "claim" in inputs else {"answer": e["answer"]}),
                "label": e["human_label"],
                "rationale": _reason(e),
                "judge_verdict": e["judge_verdict"],
                "question_id": e["question_id"],
                "claim_index": e["claim_index"],
            }
            for e in examples
        ],
    }


def langfuse_item(example: dict[str, Any], *, dataset: str, campaign: str) -> dict[str, Any]:
    key = f"{campaign}-{example['question_id']}" + (
        f"-{example['claim_index']}" if example["claim_index"] is not None else ""
    )
    return {
        "dataset_name": dataset,
        "id": key,
        "input": {
            "question": example["question"],
            "context": example["context"],
            **({"claim": example["claim"]} if example["claim"] else {"answer": example["answer"]}),
        },
        "expected_output": {"label": example["human_label"], "rationale": _reason(example)},
        "metadata": {
            "question_id": example["question_id"],
            "claim_index": example["claim_index"],
            "error": example["error"],
            "judge_verdict": example["judge_verdict"],
            "judge_rationale": example["judge_rationale"],
            "source": f"labelstudio-lite campaign {campaign}",
        },
    }


def render(examples: list[dict[str, Any]], fmt: str, *, chats: list[dict[str, Any]], unit: str, campaign: str) -> str:
    """The text of an ``openai``, ``dspy`` or ``langfuse`` export (``chats``: the examples as chat messages)."""
    if fmt == "openai":
        return "".join(json.dumps(openai_line(c), ensure_ascii=False) + "\n" for c in chats)
    if fmt == "dspy":
        return json.dumps(dspy_document(examples, unit=unit), ensure_ascii=False, indent=1) + "\n"
    dataset = f"{campaign}-disagreements"
    return "".join(
        json.dumps(langfuse_item(e, dataset=dataset, campaign=campaign), ensure_ascii=False) + "\n" for e in examples
    )


FORMATS = ("openai", "dspy", "langfuse")

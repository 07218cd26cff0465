"""Labels in Label Studio's import format: the task list its import takes (``POST /api/projects/{id}/import``
or the Import button), with every label an annotation, and the labelling config those annotations fit.

A task is one labelled item: ``data`` holds what an annotator sees (question, retrieved context, answer,
claim) and the item's key (``question_id``, ``claim_index``), so the export imports back here by id.
Each label is an annotation whose ``result`` is the ``label`` choice and the ``rationale`` text area;
``completed_by`` is ``{"email", "username"}``, because Label Studio finds the annotator among its
organisation's members by email (an annotator known here without one is written with an empty email:
Label Studio then gives the label to the importing user only where ``ALLOW_IMPORT_TASKS_WITH_UNKNOWN_EMAILS``
is set, and refuses the file elsewhere), while our importer reads the username. The item's stratum is
left out: it names the judge's verdict, which Label Studio would show to whoever opens the task.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from xml.sax.saxutils import quoteattr

from ..models import Campaign, Item, Label

#: The control tags the annotations' results name (``from_name``), as the config declares them.
LABEL_CONTROL = "label"
RATIONALE_CONTROL = "rationale"


def label_studio_config(campaign: Campaign) -> str:
    """The Label Studio labelling config (XML) the exported tasks and annotations fit."""
    target = campaign.unit  # "answer" or "claim": what the label is about
    choices = "\n".join(f"    <Choice value={quoteattr(value)}/>" for value in Label.Value.values)
    claim = '  <Text name="claim" value="$claim"/>\n' if target == "claim" else ""
    return (
        "<View>\n"
        '  <Text name="question" value="$question"/>\n'
        '  <Text name="context" value="$context"/>\n'
        '  <Text name="answer" value="$answer"/>\n'
        f"{claim}"
        f"  <Header value={quoteattr(campaign.judge_question)}/>\n"
        f'  <Choices name="{LABEL_CONTROL}" toName="{target}" choice="single" required="true">\n'
        f"{choices}\n"
        "  </Choices>\n"
        f'  <TextArea name="{RATIONALE_CONTROL}" toName="{target}" placeholder="Why (optional)"/>\n'
        "</View>\n"
    )


def _task_data(item: Item) -> dict[str, Any]:
    row = item.row
    data: dict[str, Any] = {
        "question_id": row.question.qid,
        "question": row.question.text,
        "context": "\n\n".join(chunk["text"] for chunk in row.context_chunks),
        "answer": row.answer,
    }
    if item.claim_index is not None:
        claims = row.claims or []
        data["claim_index"] = item.claim_index
        data["claim"] = claims[item.claim_index]["text"] if item.claim_index < len(claims) else ""
    return data


def _annotation(label: Label, target: str) -> dict[str, Any]:
    user = label.annotator
    name = user.username if user else label.external_annotator
    result: list[dict[str, Any]] = [
        {
            "from_name": LABEL_CONTROL,
            "to_name": target,
            "type": "choices",
            "value": {"choices": [label.value]},
        }
    ]
    if label.rationale:
        result.append(
            {
                "from_name": RATIONALE_CONTROL,
                "to_name": target,
                "type": "textarea",
                "value": {"text": [label.rationale]},
            }
        )
    return {
        "result": result,
        "completed_by": {"email": (user.email if user else "") or "", "username": name},
        "lead_time": label.seconds,
        "was_cancelled": False,
        "ground_truth": False,
    }


def label_studio_tasks(campaign: Campaign) -> Iterator[dict[str, Any]]:
    """One task a labelled item, in hand-out order, its labels as annotations (streamed)."""
    labels = (
        Label.objects.filter(item__campaign=campaign)
        .select_related("item__row__question", "annotator")
        .order_by("item__position", "created_at", "pk")
    )
    task: dict[str, Any] | None = None
    current = None
    for label in labels.iterator(chunk_size=2000):
        if label.item_id != current:
            if task is not None:
                yield task
            current = label.item_id
            task = {"data": _task_data(label.item), "meta": {"split": label.item.split}, "annotations": []}
        task["annotations"].append(_annotation(label, campaign.unit))
    if task is not None:
        yield task


def label_studio_json(campaign: Campaign) -> str:
    """The task list as one JSON array (what Label Studio's import takes), a task a line."""
    lines = [json.dumps(task, ensure_ascii=False) for task in label_studio_tasks(campaign)]
    return "[\n" + ",\n".join(lines) + "\n]\n" if lines else "[]\n"

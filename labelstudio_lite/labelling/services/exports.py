"""Everything that leaves a campaign with people's labels: label exports and disagreement exports,
their records, and what those records mean for the held-out split.

Every export is recorded (:class:`~labelstudio_lite.labelling.models.ExportRecord`: who, when,
which items, which judge config), versioned per campaign, whatever door asked for it (page, API,
command): the door calls :func:`labels_export` or :func:`disagreements_export` and nothing else.
The judge report reads the records back: a held-out item in any export is leakage
(:func:`leakage`), and tuning again after looking at a re-measurement spends the held-out split
(:func:`heldout_spent`).

Disagreement exports come from the tuning split only: the held-out split is kept to re-measure the
tuned judge on labels it never saw. A label export holds every label, held-out items included.
Every export keeps its content, so it is downloaded (and downloaded again) by a GET of the
record that the export's POST created: reading never records, recording never happens on a read.
"""

from __future__ import annotations

import io
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max

from evalcore.services.problems import UserFacingError
from evalcore.services.spreadsheets import SafeDictWriter

from ..models import Campaign, ExportRecord, Item, Label, RemeasurementView, Verdict, VerdictSet
from ..results import Result
from ..selectors import final_labels, judge_verdicts
from . import export_formats
from .label_formats import label_studio_json

#: csv and jsonl are our label lines; label-studio is the task list Label Studio's import takes.
LABEL_FORMATS = ("csv", "jsonl", "label-studio")
LABEL_FIELDS = [
    "question_id",
    "claim_index",
    "split",
    "stratum",
    "label",
    "score",  # ordinal campaigns: the score on the scale (its class is "label"); what the import reads back
    "annotator",
    "external",
    "rationale",
    "seconds",
    "final_label",
    "final_status",
    "created_at",
]
DISAGREEMENT_FORMATS = ("jsonl", "chat", "csv", *export_formats.FORMATS)
DISAGREEMENT_FIELDS = [
    "error",
    "question_id",
    "claim_index",
    "question",
    "context",
    "answer",
    "claim",
    "human_label",
    "human_rationales",
    "judge_verdict",
    "judge_rationale",
    "item_id",
]
DEFAULT_SYSTEM_PROMPT = (
    "You check whether a claim is supported by the retrieved context. Answer SUPPORTED or UNSUPPORTED, then why."
)


class ExportError(UserFacingError):
    pass


def record_export(
    *,
    campaign: Campaign,
    kind: str,
    fmt: str,
    options: dict,
    judge_config: Any,
    item_ids: list[int],
    content: str,
    user: Any,
) -> ExportRecord:
    """Record an export with the next version number of the campaign (safe under concurrency)."""
    heldout = Item.objects.filter(pk__in=item_ids, split=Item.Split.HELDOUT).count() if item_ids else 0
    for _ in range(5):
        try:
            with transaction.atomic():
                version = (ExportRecord.objects.filter(campaign=campaign).aggregate(v=Max("version"))["v"] or 0) + 1
                return ExportRecord.objects.create(
                    campaign=campaign,
                    kind=kind,
                    version=version,
                    fmt=fmt,
                    options=options,
                    judge_config=judge_config,
                    item_ids=item_ids,
                    heldout_items=heldout,
                    content=content,
                    created_by=user if getattr(user, "pk", None) else None,
                )
        except IntegrityError:
            continue
    raise ExportError("could not record the export: too many exports at once; try again")


# ----------------------------------------------------------------------------------------------
# Label exports: every label of the campaign
# ----------------------------------------------------------------------------------------------


def label_rows(campaign: Campaign) -> Iterator[dict[str, Any]]:
    """Every label of the campaign with its item and final label, in hand-out order (streamed)."""
    finals = final_labels(campaign)
    labels = (
        Label.objects.filter(item__campaign=campaign)
        .select_related("item__row__question", "annotator")
        .order_by("item__position", "created_at")
    )
    for label in labels.iterator(chunk_size=2000):
        final = finals.get(label.item_id)
        yield {
            "question_id": label.item.row.question.qid,
            "claim_index": label.item.claim_index,
            "split": label.item.split,
            "stratum": label.item.stratum,
            "label": label.value,
            "score": label.score,
            "annotator": label.annotator.username if label.annotator_id else label.external_annotator,
            "external": not label.annotator_id,
            "rationale": label.rationale,
            "seconds": label.seconds,
            "final_label": final.value if final else None,
            "final_status": final.status if final else None,
            "created_at": label.created_at.isoformat(),
        }


def label_lines(campaign: Campaign, fmt: str) -> Iterator[str]:
    """The campaign's labels as CSV or JSON Lines text, a line at a time."""
    if fmt == "jsonl":
        for row in label_rows(campaign):
            yield json.dumps(row, ensure_ascii=False) + "\n"
        return
    buffer = io.StringIO()
    writer = SafeDictWriter(buffer, fieldnames=LABEL_FIELDS)
    writer.writeheader()
    yield buffer.getvalue()
    for row in label_rows(campaign):
        buffer.seek(0)
        buffer.truncate()
        writer.writerow(row)
        yield buffer.getvalue()


def labels_export(*, campaign: Campaign, fmt: str, user: Any = None) -> ExportRecord:
    """Export every label of the campaign (held-out items included) as CSV, JSON Lines or Label Studio tasks:
    record and return the export.

    The record keeps the file (``content``) and lists every labelled item, so the judge report
    sees the held-out ones leave.
    """
    if fmt not in LABEL_FORMATS:
        raise ExportError(f"labels are exported as {', '.join(LABEL_FORMATS)}, got {fmt!r}")
    item_ids = sorted(set(Label.objects.filter(item__campaign=campaign).values_list("item_id", flat=True)))
    return record_export(
        campaign=campaign,
        kind=ExportRecord.Kind.LABELS,
        fmt=fmt,
        options={},
        judge_config=None,
        item_ids=item_ids,
        content=label_studio_json(campaign) if fmt == "label-studio" else "".join(label_lines(campaign, fmt)),
        user=user,
    )


# ----------------------------------------------------------------------------------------------
# Disagreement exports: few-shot examples from the tuning split
# ----------------------------------------------------------------------------------------------


def _judge_rationale(item: Item, verdict_set: VerdictSet | None) -> str:
    if verdict_set is not None:
        verdict = Verdict.objects.filter(verdict_set=verdict_set, item=item).first()
        return verdict.rationale if verdict else ""
    claims = item.row.claims or []
    if item.claim_index is not None and item.claim_index < len(claims):
        return claims[item.claim_index].get("rationale", "")
    unsupported = [c["rationale"] for c in claims if not c.get("supported") and c.get("rationale")]
    # a supported answer (a false pass, the error that matters) has no unsupported claim: give why the judge passed each claim
    return " ".join(unsupported or [c["rationale"] for c in claims if c.get("rationale")])


def _choose(groups: dict[str, list[int]], *, limit: int | None, balanced: bool, seed: int) -> dict[str, list[int]]:
    """Pick the examples: all, a random ``limit`` of them, or as many false passes as false fails."""
    rng = random.Random(seed)
    for ids in groups.values():
        rng.shuffle(ids)
    if balanced:
        per_group = min(len(ids) for ids in groups.values())
        if limit is not None:
            per_group = min(per_group, limit // 2)
        return {name: ids[:per_group] for name, ids in groups.items()}
    if limit is None:
        return groups
    chosen: dict[str, list[int]] = {name: [] for name in groups}
    pool = [(name, pk) for name, ids in groups.items() for pk in ids]
    rng.shuffle(pool)
    for name, pk in pool[:limit]:
        chosen[name].append(pk)
    return chosen


def disagreement_examples(
    campaign: Campaign,
    *,
    verdict_set: VerdictSet | None = None,
    limit: int | None = None,
    balanced: bool = False,
    seed: int = 7,
) -> list[dict[str, Any]]:
    """Tuning items where the judge and the final human label disagree, as example dicts."""
    if limit is not None and limit < 1:
        raise ExportError(f"limit must be a positive number of examples, got {limit}")
    verdicts = judge_verdicts(campaign, verdict_set)
    finals = final_labels(campaign)
    items = {
        item.pk: item
        for item in Item.objects.filter(campaign=campaign, split=Item.Split.TUNING)
        .select_related("row__question")
        .order_by("position")
    }
    groups: dict[str, list[int]] = {"false_pass": [], "false_fail": []}
    for pk in items:
        final = finals[pk].value
        if final is None or pk not in verdicts:
            continue
        judge_ok = verdicts[pk]
        if judge_ok and final == Label.Value.UNSUPPORTED:
            groups["false_pass"].append(pk)
        elif not judge_ok and final == Label.Value.SUPPORTED:
            groups["false_fail"].append(pk)
    chosen = _choose(groups, limit=limit, balanced=balanced, seed=seed)
    rationales: dict[int, list[str]] = {}
    for item_id, text in (
        Label.objects.filter(item_id__in=[pk for ids in chosen.values() for pk in ids])
        .exclude(rationale="")
        .values_list("item_id", "rationale")
    ):
        rationales.setdefault(item_id, []).append(text)
    examples = []
    for error in ("false_pass", "false_fail"):
        for pk in sorted(chosen[error], key=lambda k: items[k].position):
            item = items[pk]
            row = item.row
            claim = None
            if item.claim_index is not None and item.claim_index < len(row.claims or []):
                claim = row.claims[item.claim_index]["text"]
            examples.append(
                {
                    "item_id": pk,
                    "error": error,
                    "question_id": row.question.qid,
                    "claim_index": item.claim_index,
                    "question": row.question.text,
                    "context": [c["text"] for c in row.context_chunks],
                    "answer": row.answer,
                    "claim": claim,
                    "human_label": finals[pk].value,
                    "human_rationales": rationales.get(pk, []),
                    "judge_verdict": "supported" if verdicts[pk] else "unsupported",
                    "judge_rationale": _judge_rationale(item, verdict_set),
                }
            )
    return examples


def _chat(example: dict[str, Any], campaign: Campaign, system_prompt: str) -> dict[str, Any]:
    context = "\n".join(f"[{i + 1}] {text}" for i, text in enumerate(example["context"]))
    target = f"Claim: {example['claim']}" if example["claim"] else f"Answer: {example['answer']}"
    user = f"Question: {example['question']}\n\nContext:\n{context}\n\n{target}\n\n{campaign.judge_question}"
    reason = " ".join(example["human_rationales"]) or (
        "People found this unsupported by the context."
        if example["human_label"] == "unsupported"
        else "People found this supported by the context."
    )
    assistant = f"{example['human_label'].upper()}. {reason}"
    return {
        "messages": [
            {"role": "system", "content": system_prompt},
            {"role": "user", "content": user},
            {"role": "assistant", "content": assistant},
        ],
        "metadata": {
            "item_id": example["item_id"],
            "question_id": example["question_id"],
            "claim_index": example["claim_index"],
            "error": example["error"],
            "judge_verdict": example["judge_verdict"],
        },
    }


def render_examples(examples: list[dict[str, Any]], fmt: str, campaign: Campaign, system_prompt: str) -> str:
    if fmt == "jsonl":
        return "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in examples)
    if fmt == "chat":
        return "".join(json.dumps(_chat(e, campaign, system_prompt), ensure_ascii=False) + "\n" for e in examples)
    if fmt in export_formats.FORMATS:
        chats = [_chat(e, campaign, system_prompt) for e in examples]
        return export_formats.render(examples, fmt, chats=chats, unit=campaign.unit, campaign=campaign.name)
    buffer = io.StringIO()
    writer = SafeDictWriter(buffer, fieldnames=DISAGREEMENT_FIELDS)
    writer.writeheader()
    for e in examples:
        writer.writerow(
            {
                **{k: e[k] for k in DISAGREEMENT_FIELDS if k not in ("context", "human_rationales")},
                "context": "\n\n".join(e["context"]),
                "human_rationales": " | ".join(e["human_rationales"]),
            }
        )
    return buffer.getvalue()


def disagreements_export(
    *,
    campaign: Campaign,
    fmt: str,
    limit: int | None = None,
    balanced: bool = False,
    seed: int = 7,
    verdict_set: VerdictSet | None = None,
    user: Any = None,
) -> ExportRecord:
    """Export the tuning split's disagreements as few-shot examples; record and return the export."""
    if fmt not in DISAGREEMENT_FORMATS:
        raise ExportError(f"format must be one of {', '.join(DISAGREEMENT_FORMATS)}, got {fmt!r}")
    examples = disagreement_examples(campaign, verdict_set=verdict_set, limit=limit, balanced=balanced, seed=seed)
    judge = verdict_set.judge_config if verdict_set else campaign.run.judge_config
    system_prompt = judge.prompt if judge and judge.prompt else DEFAULT_SYSTEM_PROMPT
    content = render_examples(examples, fmt, campaign, system_prompt)
    options = {
        "limit": limit,
        "balanced": balanced,
        "seed": seed,
        "verdict_set": verdict_set.pk if verdict_set else None,
        "false_pass": sum(1 for e in examples if e["error"] == "false_pass"),
        "false_fail": sum(1 for e in examples if e["error"] == "false_fail"),
    }
    return record_export(
        campaign=campaign,
        kind=ExportRecord.Kind.DISAGREEMENTS,
        fmt=fmt,
        options=options,
        judge_config=judge,
        item_ids=[e["item_id"] for e in examples],
        content=content,
        user=user,
    )


# ----------------------------------------------------------------------------------------------
# What the exports did to the held-out split
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LeakedExport(Result):
    version: int
    kind: str
    items: int
    created_at: str


@dataclass(frozen=True)
class Leakage(Result):
    """The exports that held held-out items, and how many held-out items left in any export."""

    leaked_exports: tuple[LeakedExport, ...]
    leaked_items: int


def leakage(campaign: Campaign) -> Leakage:
    """Which exports of the campaign held held-out items (any export of one is leakage)."""
    heldout = set(Item.objects.filter(campaign=campaign, split=Item.Split.HELDOUT).values_list("pk", flat=True))
    leaks = []
    leaked_items: set[int] = set()
    records = (
        ExportRecord.objects.filter(campaign=campaign)
        .order_by("version")
        .values_list("version", "kind", "item_ids", "created_at")
    )
    for version, kind, item_ids, created_at in records:  # not the stored content
        leaked = heldout.intersection(item_ids)
        if leaked:
            leaks.append(LeakedExport(version, kind, len(leaked), created_at.isoformat()))
            leaked_items |= leaked
    return Leakage(leaked_exports=tuple(leaks), leaked_items=len(leaked_items))


@dataclass(frozen=True)
class HeldoutSpent(Result):
    viewed_at: str
    export_version: int
    exported_at: str
    message: str


def heldout_spent(campaign: Campaign) -> HeldoutSpent | None:
    """The held-out split is spent once a re-measurement was looked at and the judge tuned again after."""
    view = RemeasurementView.objects.filter(campaign=campaign).order_by("viewed_at").first()
    if view is None:
        return None
    later = (
        ExportRecord.objects.filter(
            campaign=campaign, kind=ExportRecord.Kind.DISAGREEMENTS, created_at__gt=view.viewed_at
        )
        .order_by("created_at")
        .first()
    )
    if later is None:
        return None
    return HeldoutSpent(
        viewed_at=view.viewed_at.isoformat(),
        export_version=later.version,
        exported_at=later.created_at.isoformat(),
        message=(
            f"The held-out split is spent: a re-measurement on it was looked at on {view.viewed_at:%Y-%m-%d %H:%M}, and the judge "
            f"was tuned again after that (export v{later.version}). Its labels no longer give a fresh measurement: sample a fresh held-out set."
        ),
    )

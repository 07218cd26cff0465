"""Disagreement exports for prompt tuning, and verdicts of a new judge config imported for re-measurement.

Exports come from the tuning split only: the held-out split is kept to re-measure the tuned judge
on labels it never saw. Every export is versioned and recorded (who, when, which items, which
judge config) with its content, so it can be downloaded again.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import random
from pathlib import Path
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max

from evalcore.services.fields import FieldError, as_bool, as_id, as_int, as_text
from evalcore.services.judge_configs import judge_config_get_or_create, normalize_judge_config
from evalcore.services.problems import ImportFailed, ImportProblem, ProblemCollector, UserFacingError
from evalcore.services.readers import container_of, read_records

from ..models import Campaign, ExportRecord, Item, Label, Verdict, VerdictSet
from ..selectors import final_labels
from .judge_report import judge_verdicts

FORMATS = ("jsonl", "chat", "csv")
CSV_FIELDS = ["error", "question_id", "claim_index", "question", "context", "answer", "claim", "human_label", "human_rationales",
              "judge_verdict", "judge_rationale", "item_id"]


class ExportError(UserFacingError):
    pass


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


def disagreement_examples(
    campaign: Campaign, *, verdict_set: VerdictSet | None = None, limit: int | None = None, balanced: bool = False, seed: int = 7
) -> list[dict[str, Any]]:
    """Tuning items where the judge and the final human label disagree, as example dicts."""
    if limit is not None and limit < 1:
        raise ExportError(f"limit must be a positive number of examples, got {limit}")
    verdicts = judge_verdicts(campaign, verdict_set)
    finals = final_labels(campaign)
    items = {
        item.pk: item
        for item in Item.objects.filter(campaign=campaign, split=Item.Split.TUNING).select_related("row__question").order_by("position")
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
    rng = random.Random(seed)
    for ids in groups.values():
        rng.shuffle(ids)
    if balanced:
        per_group = min(len(ids) for ids in groups.values())
        if limit is not None:
            per_group = min(per_group, limit // 2)
        chosen = {name: ids[:per_group] for name, ids in groups.items()}
    elif limit is not None:
        chosen = {name: [] for name in groups}
        pool = [(name, pk) for name, ids in groups.items() for pk in ids]
        rng.shuffle(pool)
        for name, pk in pool[:limit]:
            chosen[name].append(pk)
    else:
        chosen = groups
    rationales: dict[int, list[str]] = {}
    for item_id, text in Label.objects.filter(item_id__in=[pk for ids in chosen.values() for pk in ids]).exclude(rationale="").values_list("item_id", "rationale"):
        rationales.setdefault(item_id, []).append(text)
    examples = []
    for error in ("false_pass", "false_fail"):
        for pk in sorted(chosen[error], key=lambda k: items[k].position):
            item = items[pk]
            row = item.row
            claim = None
            if item.claim_index is not None and item.claim_index < len(row.claims or []):
                claim = row.claims[item.claim_index]["text"]
            examples.append({
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
            })
    return examples


def _chat(example: dict[str, Any], campaign: Campaign, system_prompt: str) -> dict[str, Any]:
    context = "\n".join(f"[{i + 1}] {text}" for i, text in enumerate(example["context"]))
    target = f"Claim: {example['claim']}" if example["claim"] else f"Answer: {example['answer']}"
    user = f"Question: {example['question']}\n\nContext:\n{context}\n\n{target}\n\n{campaign.judge_question}"
    reason = " ".join(example["human_rationales"]) or (
        "People found this unsupported by the context." if example["human_label"] == "unsupported" else "People found this supported by the context."
    )
    assistant = f"{example['human_label'].upper()}. {reason}"
    return {
        "messages": [
            {"role": "system", "content": system_prompt},
            {"role": "user", "content": user},
            {"role": "assistant", "content": assistant},
        ],
        "metadata": {"item_id": example["item_id"], "question_id": example["question_id"], "claim_index": example["claim_index"],
                     "error": example["error"], "judge_verdict": example["judge_verdict"]},
    }


def render_examples(examples: list[dict[str, Any]], fmt: str, campaign: Campaign, system_prompt: str) -> str:
    if fmt == "jsonl":
        return "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in examples)
    if fmt == "chat":
        return "".join(json.dumps(_chat(e, campaign, system_prompt), ensure_ascii=False) + "\n" for e in examples)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS)
    writer.writeheader()
    for e in examples:
        writer.writerow({
            **{k: e[k] for k in CSV_FIELDS if k not in ("context", "human_rationales")},
            "context": "\n\n".join(e["context"]), "human_rationales": " | ".join(e["human_rationales"]),
        })
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
    if fmt not in FORMATS:
        raise ExportError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    examples = disagreement_examples(campaign, verdict_set=verdict_set, limit=limit, balanced=balanced, seed=seed)
    judge = verdict_set.judge_config if verdict_set else campaign.run.judge_config
    system_prompt = (judge.prompt if judge and judge.prompt else
                     "You check whether a claim is supported by the retrieved context. Answer SUPPORTED or UNSUPPORTED, then why.")
    content = render_examples(examples, fmt, campaign, system_prompt)
    options = {"limit": limit, "balanced": balanced, "seed": seed, "verdict_set": verdict_set.pk if verdict_set else None,
               "false_pass": sum(1 for e in examples if e["error"] == "false_pass"),
               "false_fail": sum(1 for e in examples if e["error"] == "false_fail")}
    return record_export(campaign=campaign, kind=ExportRecord.Kind.DISAGREEMENTS, fmt=fmt, options=options, judge_config=judge,
                         item_ids=[e["item_id"] for e in examples], content=content, user=user)


def record_export(*, campaign: Campaign, kind: str, fmt: str, options: dict, judge_config: Any, item_ids: list[int], content: str, user: Any) -> ExportRecord:
    """Record an export with the next version number of the campaign (safe under concurrency)."""
    heldout = Item.objects.filter(pk__in=item_ids, split=Item.Split.HELDOUT).count() if item_ids else 0
    for _ in range(5):
        try:
            with transaction.atomic():
                version = (ExportRecord.objects.filter(campaign=campaign).aggregate(v=Max("version"))["v"] or 0) + 1
                return ExportRecord.objects.create(
                    campaign=campaign, kind=kind, version=version, fmt=fmt, options=options, judge_config=judge_config,
                    item_ids=item_ids, heldout_items=heldout, content=content, created_by=user if getattr(user, "pk", None) else None,
                )
        except IntegrityError:
            continue
    raise ExportError("could not record the export: too many exports at once; try again")


# ----------------------------------------------------------------------------------------------
# Verdicts of a new judge config
# ----------------------------------------------------------------------------------------------


def verdicts_import(*, campaign: Campaign, path: Path, judge_config: dict[str, Any], display_name: str | None = None, user: Any = None) -> tuple[VerdictSet, bool, str]:
    """Import a new judge config's verdicts on the campaign's items (question_id, claim_index, supported, rationale)."""
    display = display_name or path.name
    config = normalize_judge_config(judge_config, display="judge config")
    original = campaign.run.judge_config
    if original is not None and original.config_hash == config["config_hash"]:
        raise ImportFailed([ImportProblem(display, None, None, "these verdicts come from the run's own judge config; a re-measurement needs a different (tuned) config")])
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    existing = VerdictSet.objects.filter(campaign=campaign, judge_config__config_hash=config["config_hash"]).first()
    if existing is not None:
        if existing.source_hash == digest:
            return existing, False, f"Nothing new: these verdicts of {existing.judge_config} are already imported."
        raise ImportFailed([ImportProblem(display, None, None, f"verdicts of this judge config were already imported for {campaign.name} from another file")])
    items = {
        (qid, claim_index): pk
        for pk, qid, claim_index in Item.objects.filter(campaign=campaign).values_list("pk", "row__question__qid", "claim_index")
    }
    problems = ProblemCollector(display)
    parsed: list[tuple[int, bool, str]] = []
    seen: dict[int, int] = {}
    for record in read_records(path, container_of(path), display):
        data = record.data
        try:
            qid = as_id(data.get("question_id"), "question_id")
            claim_index = as_int(data.get("claim_index"), "claim_index") if campaign.unit == Campaign.Unit.CLAIM else None
            supported = as_bool(data.get("supported"), "supported")
            rationale = as_text(data.get("rationale"), "rationale")
        except FieldError as error:
            problems.add(record.line, error.field, error.message)
            continue
        pk = items.get((qid, claim_index))
        if pk is None:
            problems.add(record.line, "question_id", f"question {qid!r}" + (f", claim {claim_index}" if claim_index is not None else "") + f" is not an item of {campaign.name!r}")
            continue
        if pk in seen:
            problems.add(record.line, "question_id", f"this item already has a verdict on line {seen[pk]}")
            continue
        seen[pk] = record.line
        parsed.append((pk, supported, rationale))
    problems.raise_if_any()
    if not parsed:
        raise ImportFailed([ImportProblem(display, None, None, "the file holds no verdicts")])
    with transaction.atomic():
        verdict_set = VerdictSet.objects.create(
            campaign=campaign, judge_config=judge_config_get_or_create(config), source_name=display, source_hash=digest,
            created_by=user if getattr(user, "pk", None) else None,
        )
        Verdict.objects.bulk_create([Verdict(verdict_set=verdict_set, item_id=pk, supported=s, rationale=r) for pk, s, r in parsed])
    heldout_total = Item.objects.filter(campaign=campaign, split=Item.Split.HELDOUT).count()
    heldout_covered = Item.objects.filter(pk__in=[pk for pk, _, _ in parsed], split=Item.Split.HELDOUT).count()
    return verdict_set, True, (
        f"Imported {len(parsed)} verdicts of {verdict_set.judge_config} ({heldout_covered} of {heldout_total} held-out items covered)."
    )

"""Import labels made elsewhere (teams arrive with spreadsheets) and export labels.

Import is atomic and idempotent with line-numbered errors, like every import: a line names the
question id (and the claim index for claim campaigns) of an item in the campaign, the label and
the annotator. Annotators who are not users are kept as external annotators.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from evalcore.services.fields import FieldError, as_id, as_int, as_text
from evalcore.services.problems import ImportFailed, ImportProblem, ProblemCollector
from evalcore.services.readers import container_of, read_records

from ..models import Campaign, Item, Label
from ..selectors import final_labels

Progress = Callable[[int, int | None, str], None]
VALUES = {"supported": "supported", "unsupported": "unsupported", "cant_tell": "cant_tell", "can't tell": "cant_tell", "cant tell": "cant_tell"}


@dataclass(frozen=True)
class LabelImportResult:
    created: int
    unchanged: int
    external_annotators: list[str]
    message: str


def _noop(done: int, total: int | None, message: str) -> None:
    return None


def labels_import(*, campaign: Campaign, path: Path, display_name: str | None = None, progress: Progress = _noop) -> LabelImportResult:
    display = display_name or path.name
    if container_of(path) not in ("csv", "jsonl"):
        raise ImportFailed([ImportProblem(display, None, None, "labels are imported from CSV or JSON Lines")])
    items: dict[tuple[str, int | None], Item] = {
        (qid, claim_index): item
        for item, qid, claim_index in (
            (i, i.row.question.qid, i.claim_index) for i in Item.objects.filter(campaign=campaign).select_related("row__question")
        )
    }
    User = get_user_model()
    users = {u.username: u for u in User.objects.all()}
    problems = ProblemCollector(display)
    parsed: list[tuple[int, Item, Any, str, str, str]] = []
    seen: dict[tuple[int, str], int] = {}
    for record in read_records(path, container_of(path), display):
        data = record.data
        try:
            qid = as_id(data.get("question_id"), "question_id")
            claim_index = None
            if campaign.unit == Campaign.Unit.CLAIM:
                claim_index = as_int(data.get("claim_index"), "claim_index")
            elif data.get("claim_index") not in (None, ""):
                raise FieldError("claim_index", "this is an answer campaign: leave claim_index empty")
            raw_value = as_text(data.get("label"), "label", required=True).strip().lower()
            if raw_value not in VALUES:
                raise FieldError("label", f"must be supported, unsupported or cant_tell, got {raw_value!r}")
            annotator = as_text(data.get("annotator"), "annotator", required=True).strip()
            if len(annotator) > 150:
                raise FieldError("annotator", "is longer than 150 characters")
            rationale = as_text(data.get("rationale"), "rationale")
        except FieldError as error:
            problems.add(record.line, error.field, error.message)
            continue
        item = items.get((qid, claim_index))
        if item is None:
            what = f"question {qid!r}" + (f", claim {claim_index}" if claim_index is not None else "")
            problems.add(record.line, "question_id", f"{what} is not an item of campaign {campaign.name!r}")
            continue
        key = (item.pk, annotator)
        if key in seen:
            problems.add(record.line, "annotator", f"{annotator!r} labels this item twice (first on line {seen[key]})")
            continue
        seen[key] = record.line
        parsed.append((record.line, item, users.get(annotator), annotator, VALUES[raw_value], rationale))
    problems.raise_if_any()
    if not parsed:
        raise ImportFailed([ImportProblem(display, None, None, "the file holds no labels")])

    created = unchanged = 0
    externals: set[str] = set()
    with transaction.atomic():
        for i, (line, item, user, name, value, rationale) in enumerate(parsed, start=1):
            lookup = {"annotator": user} if user else {"external_annotator": name}
            existing = Label.objects.filter(item=item, **lookup).first()
            if existing is not None:
                if existing.value == value:
                    unchanged += 1
                    continue
                problems.add(line, "label", f"{name!r} already labelled this item {existing.value!r}; change it on the labelling page instead")
                continue
            if value != Label.Value.CANT_TELL:
                if not Item.objects.filter(pk=item.pk).take_labelled_slot():
                    problems.add(line, "question_id", f"this item already has its {item.overlap} label(s) (the campaign's overlap)")
                    continue
            Label.objects.create(item=item, value=value, rationale=rationale, source="import", **lookup)
            if user is None:
                externals.add(name)
            created += 1
            if i % 500 == 0:
                progress(i, len(parsed), "importing labels")
        if problems:
            transaction.set_rollback(True)
    problems.raise_if_any()
    if created == 0:
        message = f"Nothing new: all {unchanged} labels were already in campaign {campaign.name!r}."
    else:
        message = f"Imported {created} labels into {campaign.name!r}" + (f" ({unchanged} already there)" if unchanged else "") + "."
        if externals:
            message += f" External annotators (not users): {', '.join(sorted(externals))}."
    return LabelImportResult(created, unchanged, sorted(externals), message)


EXPORT_FIELDS = ["question_id", "claim_index", "split", "stratum", "label", "annotator", "external", "rationale", "seconds", "final_label", "final_status", "created_at"]


def export_rows(campaign: Campaign) -> Iterator[dict[str, Any]]:
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
            "annotator": label.annotator.username if label.annotator_id else label.external_annotator,
            "external": not label.annotator_id,
            "rationale": label.rationale,
            "seconds": label.seconds,
            "final_label": final.value if final else None,
            "final_status": final.status if final else None,
            "created_at": label.created_at.isoformat(),
        }


def export_labels(campaign: Campaign, fmt: str) -> Iterator[str]:
    """Yield the campaign's labels as CSV or JSON Lines text, streaming."""
    if fmt == "jsonl":
        for row in export_rows(campaign):
            yield json.dumps(row, ensure_ascii=False) + "\n"
        return
    if fmt != "csv":
        raise ValueError(f"export format is csv or jsonl, got {fmt!r}")
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=EXPORT_FIELDS)
    writer.writeheader()
    yield buffer.getvalue()
    for row in export_rows(campaign):
        buffer.seek(0)
        buffer.truncate()
        writer.writerow(row)
        yield buffer.getvalue()

"""Import labels made elsewhere (teams arrive with spreadsheets).

Import is atomic and idempotent with line-numbered errors, like every import: a line names the
question id (and the claim index for claim campaigns) of an item in the campaign, the label and
the annotator. Annotators who are not users are kept as external annotators.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from evalcore.services.fields import FieldError, as_text
from evalcore.services.importing import Progress, no_progress
from evalcore.services.problems import ImportFailed, ImportProblem, ProblemCollector
from evalcore.services.readers import container_of, read_records

from ..models import Campaign, Item, Label
from .item_rows import ItemRef, campaign_items, item_lines

VALUES = {
    "supported": "supported",
    "unsupported": "unsupported",
    "cant_tell": "cant_tell",
    "can't tell": "cant_tell",
    "cant tell": "cant_tell",
}


@dataclass(frozen=True)
class LabelImportResult:
    created: int
    unchanged: int
    external_annotators: list[str]
    message: str


@dataclass(frozen=True)
class _LabelLine:
    annotator: str
    value: str
    rationale: str


def _read_label(data: dict[str, Any]) -> _LabelLine:
    raw_value = as_text(data.get("label"), "label", required=True).strip().lower()
    if raw_value not in VALUES:
        raise FieldError("label", f"must be supported, unsupported or cant_tell, got {raw_value!r}")
    annotator = as_text(data.get("annotator"), "annotator", required=True).strip()
    if len(annotator) > 150:
        raise FieldError("annotator", "is longer than 150 characters")
    return _LabelLine(annotator, VALUES[raw_value], as_text(data.get("rationale"), "rationale"))


def labels_import(
    *, campaign: Campaign, path: Path, display_name: str | None = None, progress: Progress = no_progress
) -> LabelImportResult:
    display = display_name or path.name
    if container_of(path) not in ("csv", "jsonl"):
        raise ImportFailed([ImportProblem(display, None, None, "labels are imported from CSV or JSON Lines")])
    User = get_user_model()
    users = {u.username: u for u in User.objects.all()}
    problems = ProblemCollector(display)
    parsed: list[tuple[int, ItemRef, Any, _LabelLine]] = []
    seen: dict[tuple[int, str], int] = {}
    records = read_records(path, container_of(path), display, problems=problems)
    for line, item, label in item_lines(records, campaign_items(campaign), _read_label, problems):
        key = (item.pk, label.annotator)
        if key in seen:
            problems.add(line, "annotator", f"{label.annotator!r} labels this item twice (first on line {seen[key]})")
            continue
        seen[key] = line
        parsed.append((line, item, users.get(label.annotator), label))
    problems.raise_if_any()
    if not parsed:
        raise ImportFailed([ImportProblem(display, None, None, "the file holds no labels")])

    created = unchanged = 0
    externals: set[str] = set()
    with transaction.atomic():
        for i, (line, item, user, label) in enumerate(parsed, start=1):
            name, value = label.annotator, label.value
            lookup = {"annotator": user} if user else {"external_annotator": name}
            existing = Label.objects.filter(item_id=item.pk, **lookup).first()
            if existing is not None:
                if existing.value == value:
                    unchanged += 1
                    continue
                problems.add(
                    line,
                    "label",
                    f"{name!r} already labelled this item {existing.value!r}; change it on the labelling page instead",
                )
                continue
            if value != Label.Value.CANT_TELL:
                if not Item.objects.filter(pk=item.pk).take_labelled_slot():
                    problems.add(
                        line,
                        "question_id",
                        f"this item already has its {item.overlap} label(s) (the campaign's overlap)",
                    )
                    continue
            Label.objects.create(item_id=item.pk, value=value, rationale=label.rationale, source="import", **lookup)
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
        message = (
            f"Imported {created} labels into {campaign.name!r}"
            + (f" ({unchanged} already there)" if unchanged else "")
            + "."
        )
        if externals:
            message += f" External annotators (not users): {', '.join(sorted(externals))}."
    return LabelImportResult(created, unchanged, sorted(externals), message)

"""Import labels made elsewhere (teams arrive with spreadsheets).

Import is atomic and idempotent with line-numbered errors, like every import: a line names the
question id (and the claim index for claim campaigns) of an item in the campaign, the label and
the annotator. Annotators who are not users are kept as external annotators.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from evalcore.services.fields import FieldError, as_text
from evalcore.services.importing import Progress, about_file, no_progress
from evalcore.services.problems import ImportFailed, ImportProblem, ProblemCollector, UserFacingError
from evalcore.services.readers import Record, detect_format, read_records

from ..models import Campaign, Item, Label
from .assignment import LabellingError, current_guideline_version, label_value
from .item_rows import ItemRef, campaign_items, item_lines
from .label_sources import LabelSource, label_records

LABEL_TOOLS = ("label-studio", "argilla", "langfuse-scores", "phoenix")

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
    skipped: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class _LabelLine:
    annotator: str
    value: str
    rationale: str
    score: int | None = None


def _score_of(campaign: Campaign, data: dict[str, Any]) -> tuple[str, int | None]:
    """An ordinal campaign's label: its ``score`` field (or a score in ``label``) on the scale, or cant_tell."""
    field_name = "score" if data.get("score") not in (None, "") else "label"
    raw = data.get(field_name)
    if isinstance(raw, int | float) and not isinstance(raw, bool):  # a JSON number: 3 or 3.0 is the score 3
        raw = str(int(raw)) if float(raw).is_integer() else str(raw)
    text = as_text(raw, field_name, required=True).strip()
    if VALUES.get(text.lower()) == Label.Value.CANT_TELL:
        return Label.Value.CANT_TELL, None
    try:
        return label_value(campaign, text)
    except LabellingError:
        raise FieldError(
            field_name,
            f"must be a whole score from {campaign.scale_min} to {campaign.scale_max} (or cant_tell), got {text!r}",
        ) from None


def _label_reader(
    value_map: dict[str, str], campaign: Campaign | None = None
) -> Callable[[dict[str, Any]], _LabelLine]:
    """Read a label line; ``value_map`` first turns a tool's values ("Not supported") into ours.

    On an ordinal campaign the line carries a score on the scale (``score``, or ``label``); its class follows
    from the campaign's threshold, as on the labelling page."""
    mapped = {str(k).strip().casefold(): str(v).strip().lower() for k, v in value_map.items()}
    bad = sorted({v for v in mapped.values() if v not in VALUES})
    if bad:
        raise UserFacingError(
            f"the value map maps to {bad}; map each value to supported, unsupported or cant_tell", field="value_map"
        )

    def read(data: dict[str, Any]) -> _LabelLine:
        if campaign is not None and campaign.ordinal:
            data = {**data, "label": mapped.get(str(data.get("label", "")).strip().casefold(), data.get("label"))}
            value, score = _score_of(campaign, data)
            return _LabelLine(_annotator(data), value, as_text(data.get("rationale"), "rationale"), score)
        raw = as_text(data.get("label"), "label", required=True).strip()
        raw_value = mapped.get(raw.casefold(), raw.lower())
        if raw_value not in VALUES:
            hint = "; map the export's values with a value map, e.g. 'Supported=supported,Not supported=unsupported'"
            raise FieldError(
                "label", f"must be supported, unsupported or cant_tell, got {raw!r}" + (hint if not mapped else "")
            )
        return _LabelLine(_annotator(data), VALUES[raw_value], as_text(data.get("rationale"), "rationale"))

    return read


def _annotator(data: dict[str, Any]) -> str:
    annotator = as_text(data.get("annotator"), "annotator", required=True).strip()
    if len(annotator) > 150:
        raise FieldError("annotator", "is longer than 150 characters")
    return annotator


def _by_text(records: Iterable[Record], campaign: Campaign, problems: ProblemCollector) -> Iterator[Record]:
    """Records that name their question by its text (``_text``) get its id, when exactly one question has it."""
    index: dict[str, str] | None = None
    for record in records:
        if "_text" not in record.data:
            yield record
            continue
        if index is None:
            index = {}
            pairs = Item.objects.filter(campaign=campaign).values_list("row__question__qid", "row__question__text")
            for qid, text in pairs.distinct():
                key = " ".join(text.split())
                index[key] = qid if index.get(key, qid) == qid else ""
        text = " ".join(str(record.data["_text"]).split())
        qid = index.get(text)
        if not qid:
            what = "matches no question of the campaign" if qid is None else "matches several questions"
            problems.add(record.line, "question", f"the question's text {what}; match by id instead")
            continue
        data = {k: v for k, v in record.data.items() if k != "_text"}
        yield Record(record.line, {**data, "question_id": qid})


def labels_import(
    *,
    campaign: Campaign,
    path: Path,
    display_name: str | None = None,
    fmt: str | None = None,
    source: LabelSource | None = None,
    progress: Progress = no_progress,
) -> LabelImportResult:
    """Import labels from our label lines or a tool's export (Label Studio, Argilla, Langfuse scores).

    ``source`` says how a tool's export is read (label field, value map, users, matching by id or
    text); what the tool marks unfinished is skipped and counted in the message.
    """
    display = display_name or path.name
    source = source or LabelSource()
    fmt = detect_format(path, fmt, door="labels", display=display)
    if fmt not in ("csv", "jsonl", *LABEL_TOOLS):
        raise ImportFailed(
            [
                ImportProblem(
                    display, None, None, "labels are imported from CSV or JSON Lines (or a JSON array), not Parquet"
                )
            ]
        )
    read_label = about_file(display, lambda: _label_reader(source.value_map, campaign))
    User = get_user_model()
    users = {u.username: u for u in User.objects.all()}
    problems = ProblemCollector(display)
    parsed: list[tuple[int, ItemRef, Any, _LabelLine]] = []
    seen: dict[tuple[int, str], int] = {}
    skipped: Counter = Counter()
    records = read_records(path, fmt, display, problems=problems)
    if fmt in LABEL_TOOLS:
        records = label_records(records, fmt, source, problems, skipped)
    elif source.match == "text":
        records = (Record(r.line, {**r.data, "_text": r.data.get("question")}) for r in records)
    records = _by_text(records, campaign, problems)
    for line, item, label in item_lines(records, campaign_items(campaign), read_label, problems):
        key = (item.pk, label.annotator)
        if key in seen:
            problems.add(line, "annotator", f"{label.annotator!r} labels this item twice (first on line {seen[key]})")
            continue
        seen[key] = line
        parsed.append((line, item, users.get(label.annotator), label))
    problems.raise_if_any()
    skip_note = (
        " Skipped, not labels: " + ", ".join(f"{n} {why}" for why, n in sorted(skipped.items()) if n) + "."
        if sum(skipped.values())
        else ""
    )
    if not parsed:
        raise ImportFailed([ImportProblem(display, None, None, "the file holds no labels." + skip_note)])

    created = unchanged = 0
    externals: set[str] = set()
    guideline_version = current_guideline_version(campaign)  # the guideline the labels are imported under
    with transaction.atomic():
        for i, (line, item, user, label) in enumerate(parsed, start=1):
            name, value = label.annotator, label.value
            lookup = {"annotator": user} if user else {"external_annotator": name}
            existing = Label.objects.filter(item_id=item.pk, **lookup).first()
            if existing is not None:
                if (existing.value, existing.score) == (value, label.score):
                    unchanged += 1
                    continue
                problems.add(
                    line,
                    "label",
                    f"{name!r} already labelled this item "
                    f"{existing.value if existing.score is None else existing.score!r}; change it on the labelling "
                    "page instead",
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
            Label.objects.create(
                item_id=item.pk,
                value=value,
                score=label.score,
                rationale=label.rationale,
                source="import",
                guideline_version=guideline_version,
                **lookup,
            )
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
    message += skip_note
    return LabelImportResult(created, unchanged, sorted(externals), message, dict(skipped))

"""The portable judge validation report: the judge report with the labels behind it, for publishing.

One document (:func:`published_report`) holds the report exactly as the judge report service gives it
(:func:`~.judge_report.judge_report`, the same numbers as the page, the API and ``judge_report --json``)
and, for every item of the campaign, the people's labels, the final label and its status, the judge's
verdict, the slice, the stratum and the sampling weight: enough to recompute the confusion table, the
agreement and the weighted rates without this tool. It is given as JSON or as one self-contained HTML
page (inline CSS and SVG, no script, no external asset: it opens from a file or any static host).

Annotators appear as "annotator 1", "annotator 2", … (in the order of their first label): a published
report needs who agreed with whom, not people's names. Rationales are left out (free text an
annotator never wrote for publication). The labels of held-out items are in it, so a published report
is recorded as an export like any other (:func:`judge_report_publish`): the judge report then warns
that the held-out labels left.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from django.contrib.staticfiles import finders
from django.template.loader import render_to_string
from django.utils import timezone

from evalcore.charts import confusion_heatmap_svg, slice_intervals_svg

from ..models import Campaign, ExportRecord, Item, Label, VerdictSet
from ..selectors import final_labels, judge_verdicts
from .exports import ExportError, record_export
from .judge_agreement import annotator_numbers
from .judge_report import JudgeReport, judge_report

PUBLISH_FORMATS = ("html", "json")
#: Names the document's shape, so a reader of a saved file knows what its fields mean.
SCHEMA = "labelstudio-lite/judge-validation-report/v1"
#: The charts' own stylesheet, inlined into the page.
CHARTS_CSS = "css/charts.css"


def _people(campaign: Campaign) -> dict[int, list[dict[str, str]]]:
    """Each item's labels, annotators named by the order of their first label in the campaign."""
    names = annotator_numbers(campaign)
    out: dict[int, list[dict[str, str]]] = defaultdict(list)
    rows = (
        Label.objects.filter(item__campaign=campaign)
        .order_by("created_at", "pk")
        .values_list("item_id", "annotator_id", "external_annotator", "value")
    )
    for item_id, user_id, external, value in rows.iterator(chunk_size=5000):
        who = ("user", user_id) if user_id else ("external", external)
        name = names.setdefault(who, f"annotator {len(names) + 1}")  # one who labelled since: numbered next
        out[item_id].append({"annotator": name, "label": value})
    return out


def report_labels(campaign: Campaign, *, verdict_set: VerdictSet | None = None) -> list[dict[str, Any]]:
    """Every item of the campaign with what the report's numbers are made of, in hand-out order."""
    finals = final_labels(campaign)
    verdicts = judge_verdicts(campaign, verdict_set)
    people = _people(campaign)
    items = (
        Item.objects.filter(campaign=campaign)
        .order_by("position")
        .values_list(
            "pk", "row__question__qid", "claim_index", "split", "row__question__qtype", "stratum", "sampling_weight"
        )
    )
    out = []
    for pk, qid, claim_index, split, qtype, stratum, weight in items.iterator(chunk_size=5000):
        final = finals[pk]
        verdict = verdicts.get(pk)
        out.append(
            {
                "question_id": qid,
                "claim_index": claim_index,
                "split": split,
                "slice": qtype or "(no type)",
                "stratum": stratum,
                "sampling_weight": weight,
                "labels": people.get(pk, []),
                "final_label": final.value,
                "final_status": str(final.status),
                "judge_verdict": None if verdict is None else ("supported" if verdict else "unsupported"),
            }
        )
    return out


def _report_and_document(campaign: Campaign, verdict_set: VerdictSet | None) -> tuple[JudgeReport, dict[str, Any]]:
    report = judge_report(campaign, verdict_set=verdict_set, anonymous=True)  # people by number, not name
    document = {
        "schema": SCHEMA,
        "generated_at": timezone.now().isoformat(),
        "report": report.as_dict(),
        "labels": report_labels(campaign, verdict_set=verdict_set),
    }
    return report, document


def published_report(campaign: Campaign, *, verdict_set: VerdictSet | None = None) -> dict[str, Any]:
    """The report and the labels behind it, as one JSON-ready document (nothing recorded: see
    :func:`judge_report_publish`)."""
    return _report_and_document(campaign, verdict_set)[1]


def _read_static(name: str) -> str:
    path = finders.find(name)
    if not path:
        raise ExportError(f"the static file {name} is missing: the report page cannot be made without it")
    return Path(path).read_text(encoding="utf-8")


def render_report_html(document: dict[str, Any], report: JudgeReport) -> str:
    """The document as one HTML page with everything inline (no script, no link, no external asset)."""
    context = {
        "doc": document,
        "report": report,
        "labels": document["labels"],
        "heatmap": (
            confusion_heatmap_svg(
                document["report"]["overall"]["confusion"],
                classes=(report.label_set["pass"].lower(), report.label_set["fail"].lower()),
            )
            if report.overall.n
            else ""
        ),
        "slice_plot": slice_intervals_svg(document["report"]["slices"], failure=report.failure)
        if report.slices
        else "",
        "charts_css": _read_static(CHARTS_CSS),
        "annotators": len({p["annotator"] for item in document["labels"] for p in item["labels"]}),
        "labelled": sum(1 for item in document["labels"] if item["labels"]),
    }
    return render_to_string("labelling/published_report.html", context)


def judge_report_publish(
    *, campaign: Campaign, fmt: str, verdict_set: VerdictSet | None = None, user: Any = None
) -> ExportRecord:
    """Make the portable report (``html`` or ``json``) and record it as an export of the campaign's labels."""
    if fmt not in PUBLISH_FORMATS:
        raise ExportError(f"the report is published as {' or '.join(PUBLISH_FORMATS)}, got {fmt!r}")
    report, document = _report_and_document(campaign, verdict_set)
    content = (
        json.dumps(document, indent=2, ensure_ascii=False, default=str) + "\n"
        if fmt == "json"
        else render_report_html(document, report)
    )
    labelled = Label.objects.filter(item__campaign=campaign).values_list("item_id", flat=True).distinct()
    return record_export(
        campaign=campaign,
        kind=ExportRecord.Kind.REPORT,
        fmt=fmt,
        options={"verdict_set": verdict_set.pk if verdict_set else None},
        judge_config=verdict_set.judge_config if verdict_set else campaign.run.judge_config,
        item_ids=sorted(labelled),
        content=content,
        user=user,
    )

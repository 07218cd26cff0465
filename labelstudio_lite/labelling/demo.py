"""Demo labelling data: a labelled claim campaign (so the judge report has something to show),
a tuned judge's verdicts on it (for re-measurement), and an open campaign for the demo annotators.

The demo's people are right: they label a claim supported exactly when its sentence is in the
context the model saw (see :mod:`evalcore.demo`), so every disagreement is the judge's mistake
and the few-shot examples exported from them teach the right answer.
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

from evalcore.models import Row, Run

from .models import Campaign, Item
from .services.campaigns import campaign_create
from .services.label_import import labels_import
from .services.verdicts import verdicts_import

LABELLED = "faithfulness-claims"
OPEN = "demo-claims"
PEOPLE = ["maria", "tom"]


def stated_in_context(row: Row, claim_index: int) -> bool:
    """Whether the claim's sentence is in the context the model saw: what a careful person finds."""
    claim = row.claims[claim_index]["text"]
    return any(claim in chunk["text"] for chunk in row.context_chunks)


def load_labelling_demo(paths: dict[str, Path], run: Run) -> list[str]:
    """Create the demo campaigns once (idempotent) and return what was done, line by line.

    ``run`` is the candidate run scored by the original judge; ``paths`` are the demo files
    (the tuned judge's config and its re-scored rows of the same run give its verdicts).
    """
    lines = []
    if not Campaign.objects.filter(name=LABELLED).exists():
        campaign = campaign_create(
            run=run,
            name=LABELLED,
            unit="claim",
            size=240,
            heldout_fraction=0.3,
            overlap=1,
            seed=11,
            guidance="Judge only against the context shown, not against what you know.",
        )
        rng = random.Random(5)
        folder = paths["questions"].parent
        path = folder / "faithfulness-claims.labels.csv"
        verdicts_path = folder / "judge-v2.verdicts.jsonl"
        tuned = _tuned_verdicts(paths["cand_rows_v2"])
        with (
            path.open("w", newline="", encoding="utf-8") as handle,
            verdicts_path.open("w", encoding="utf-8") as verdicts,
        ):
            writer = csv.DictWriter(
                handle, fieldnames=["question_id", "claim_index", "label", "annotator", "rationale"]
            )
            writer.writeheader()
            for item in Item.objects.filter(campaign=campaign).select_related("row__question").order_by("position"):
                qid = item.row.question.qid
                supported = stated_in_context(item.row, item.claim_index)
                human = "supported" if supported else "unsupported"
                rationale = "A chunk states it directly." if supported else "No chunk of the context states this."
                writer.writerow(
                    {
                        "question_id": qid,
                        "claim_index": item.claim_index,
                        "label": human,
                        "annotator": rng.choice(PEOPLE),
                        "rationale": rationale if rng.random() < 0.6 else "",
                    }
                )
                verdicts.write(
                    json.dumps(
                        {
                            "question_id": qid,
                            "claim_index": item.claim_index,
                            "supported": tuned[(qid, item.claim_index)],
                            "rationale": "tuned prompt v2",
                        }
                    )
                    + "\n"
                )
        result = labels_import(campaign=campaign, path=path)
        lines.append(f"Campaign {LABELLED}: {campaign.items.count()} claims; {result.message}")
        tuned_config = json.loads(paths["tuned_judge"].read_text())
        lines.append(verdicts_import(campaign=campaign, path=verdicts_path, judge_config=tuned_config).message)
    if not Campaign.objects.filter(name=OPEN).exists():
        from django.contrib.auth import get_user_model

        annotators = get_user_model().objects.filter(username__in=["ann1", "ann2", "ann3"])
        campaign = campaign_create(
            run=run, name=OPEN, unit="claim", size=200, heldout_fraction=0.3, overlap=2, seed=7, annotators=annotators
        )
        lines.append(f"Campaign {OPEN}: {campaign.items.count()} claims open for ann1, ann2 and ann3 (overlap 2).")
    return lines


def _tuned_verdicts(rows_path: Path) -> dict[tuple[str, int], bool]:
    """The tuned judge's verdict on every claim of the run it re-scored, by (question id, claim index)."""
    verdicts = {}
    with rows_path.open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            for index, claim in enumerate(row["claims"]):
                verdicts[(row["id"], index)] = claim["supported"]
    return verdicts

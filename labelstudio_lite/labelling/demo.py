"""Demo labelling data: a labelled claim campaign (so the judge report has something to show),
a tuned judge's verdicts on it (for re-measurement), and an open campaign for the demo annotators."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

from evalcore.models import Run

from .models import Campaign, Item
from .services.campaigns import campaign_create
from .services.label_import import labels_import
from .services.verdicts import verdicts_import

LABELLED = "faithfulness-claims"
OPEN = "demo-claims"
PEOPLE = ["maria", "tom"]


def load_labelling_demo(folder: Path, run: Run) -> list[str]:
    """Create the demo campaigns once (idempotent) and return what was done, line by line."""
    lines = []
    if not Campaign.objects.filter(name=LABELLED).exists():
        campaign = campaign_create(run=run, name=LABELLED, unit="claim", size=240, heldout_fraction=0.3, overlap=1, seed=11,
                                   guidance="Judge only against the context shown, not against what you know.")
        rng = random.Random(5)
        path = folder / "faithfulness-claims.labels.csv"
        verdicts_path = folder / "judge-v2.verdicts.jsonl"
        with path.open("w", newline="", encoding="utf-8") as handle, verdicts_path.open("w", encoding="utf-8") as verdicts:
            writer = csv.DictWriter(handle, fieldnames=["question_id", "claim_index", "label", "annotator", "rationale"])
            writer.writeheader()
            for item in Item.objects.filter(campaign=campaign).select_related("row__question").order_by("position"):
                if item.judge_supported:
                    human = "unsupported" if rng.random() < 0.14 else "supported"
                else:
                    human = "supported" if rng.random() < 0.18 else "unsupported"
                rationale = {"unsupported": "The context never states this.", "supported": "Chunk states it directly."}[human]
                writer.writerow({"question_id": item.row.question.qid, "claim_index": item.claim_index, "label": human,
                                 "annotator": rng.choice(PEOPLE), "rationale": rationale if rng.random() < 0.6 else ""})
                tuned = (human == "supported") if rng.random() < 0.9 else item.judge_supported
                verdicts.write(json.dumps({"question_id": item.row.question.qid, "claim_index": item.claim_index,
                                           "supported": tuned, "rationale": "tuned prompt v2"}) + "\n")
        result = labels_import(campaign=campaign, path=path)
        lines.append(f"Campaign {LABELLED}: {campaign.items.count()} claims; {result.message}")
        judge = dict(run.judge_config.__dict__) if run.judge_config else {}
        tuned_config = {
            "model": judge.get("model", "gpt-x"), "model_version": judge.get("model_version", ""),
            "prompt": (judge.get("prompt") or "") + "\nExamples of unsupported claims: (few-shot examples from the disagreements)",
            "temperature": judge.get("temperature", 0.0), "claim_splitting": judge.get("claim_splitting", ""),
            "library_versions": judge.get("library_versions", {}),
        }
        lines.append(verdicts_import(campaign=campaign, path=verdicts_path, judge_config=tuned_config).message)
    if not Campaign.objects.filter(name=OPEN).exists():
        from django.contrib.auth import get_user_model

        annotators = get_user_model().objects.filter(username__in=["ann1", "ann2", "ann3"])
        campaign = campaign_create(run=run, name=OPEN, unit="claim", size=200, heldout_fraction=0.3, overlap=2, seed=7,
                                   annotators=annotators)
        lines.append(f"Campaign {OPEN}: {campaign.items.count()} claims open for ann1, ann2 and ann3 (overlap 2).")
    return lines

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
from .services.assignment import next_item, submit_label
from .services.campaigns import campaign_create
from .services.label_import import labels_import
from .services.label_sets import label_set
from .services.verdicts import verdicts_import

LABELLED = "faithfulness-claims"
OPEN = "demo-claims"
RELEVANCE = "answer-relevance"
#: The answer-level faithfulness campaigns, one per demo run (the name ends with the run's name).
ANSWERS = "faithfulness-answers"
#: Answers labelled per run: 60 per question type, so every slice x verdict stratum has labels.
ANSWERS_SIZE = 240
PEOPLE = ["maria", "tom"]
RELEVANCE_PEOPLE = ["ann1", "ann2", "ann3"]
#: The relevance guideline (version 1) annotators see.
RELEVANCE_GUIDELINE = (
    "5: answers exactly what was asked. 4: answers it, with some padding. 3: partly answers it. "
    "2: mostly about something else. 1: does not address the question at all."
)


def stated_in_context(row: Row, claim_index: int) -> bool:
    """Whether the claim's sentence is in the context the model saw: what a careful person finds."""
    claim = row.claims[claim_index]["text"]
    return any(claim in chunk["text"] for chunk in row.context_chunks)


def load_labelling_demo(paths: dict[str, Path], run: Run, baseline: Run | None = None) -> list[str]:
    """Create the demo campaigns once (idempotent) and return what was done, line by line.

    ``run`` is the candidate run scored by the original judge; ``paths`` are the demo files
    (the tuned judge's config and its re-scored rows of the same run give its verdicts). ``baseline`` is
    the baseline run: with it both runs get an answer-level faithfulness campaign, labelled, so the gate's
    ``--judge-correction ppi`` decides the demo's faithfulness change on the corrected difference.
    """
    lines = []
    # First, so the claim campaign stays the newest: the judge's certificate and the story come from it.
    for answers_run in (baseline, run) if baseline is not None else ():
        name = f"{ANSWERS}-{answers_run.name}"
        if not Campaign.objects.filter(name=name).exists():
            lines.append(_answers_campaign(answers_run, name, paths["questions"].parent))
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
    if not Campaign.objects.filter(name=RELEVANCE).exists():
        lines.append(_relevance_campaign(run))
    if not Campaign.objects.filter(name=OPEN).exists():
        from django.contrib.auth import get_user_model

        annotators = get_user_model().objects.filter(username__in=["ann1", "ann2", "ann3"])
        campaign = campaign_create(
            run=run, name=OPEN, unit="claim", size=200, heldout_fraction=0.3, overlap=2, seed=7, annotators=annotators
        )
        lines.append(f"Campaign {OPEN}: {campaign.items.count()} claims open for ann1, ann2 and ann3 (overlap 2).")
    return lines


def answer_supported(row: Row) -> bool:
    """Whether every claim of the answer is stated in the context the model saw: what a careful person finds."""
    return all(stated_in_context(row, index) for index in range(len(row.claims or [])))


def _answers_campaign(run: Run, name: str, folder: Path) -> str:
    """An answer-level faithfulness campaign on ``run``, every item labelled by maria or tom (who are right)."""
    campaign = campaign_create(
        run=run,
        name=name,
        unit="answer",
        size=ANSWERS_SIZE,
        heldout_fraction=0.3,
        overlap=1,
        seed=17,
        guidance="An answer is supported when the context shown states every claim it makes.",
    )
    rng = random.Random(name)
    path = folder / f"{name}.labels.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["question_id", "label", "annotator"])
        writer.writeheader()
        for item in Item.objects.filter(campaign=campaign).select_related("row__question").order_by("position"):
            writer.writerow(
                {
                    "question_id": item.row.question.qid,
                    "label": "supported" if answer_supported(item.row) else "unsupported",
                    "annotator": rng.choice(PEOPLE),
                }
            )
    result = labels_import(campaign=campaign, path=path)
    return f"Campaign {name}: {campaign.items.count()} answers of run {run.name}; {result.message}"


def _tuned_verdicts(rows_path: Path) -> dict[tuple[str, int], bool]:
    """The tuned judge's verdict on every claim of the run it re-scored, by (question id, claim index)."""
    verdicts = {}
    with rows_path.open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            for index, claim in enumerate(row["claims"]):
                verdicts[(row["id"], index)] = claim["supported"]
    return verdicts


def relevance_truth(qid: str, judge_score: float) -> int:
    """What a careful person scores an answer's relevance: the judge's score, except on about one answer in
    seven, which drifts off the question while the judge still scores it 3 or more (the judge's blind spot)."""
    rng = random.Random(f"{qid}-relevance")
    return rng.choice([1, 2, 2]) if rng.random() < 0.15 else int(judge_score)


def _relevance_campaign(run: Run) -> str:
    """An answer-relevance campaign on a 1-5 scale (1-2 fail), each answer scored by ann1, ann2 and ann3 on the
    labelling service, each of them off by one point now and then."""
    from django.contrib.auth import get_user_model

    people = list(get_user_model().objects.filter(username__in=RELEVANCE_PEOPLE).order_by("username"))
    campaign = campaign_create(
        run=run,
        name=RELEVANCE,
        unit="answer",
        size=150,
        heldout_fraction=0.3,
        overlap=len(people),
        seed=13,
        guidance=RELEVANCE_GUIDELINE,
        annotators=people,
        labels=label_set(metric="answer_relevance", scale="ordinal", scale_min=1, scale_max=5, fail_at=2),
    )
    for person in people:
        rng = random.Random(f"relevance-{person.username}")
        while (served := next_item(campaign=campaign, user=person)) is not None:
            item = served.item
            score = relevance_truth(item.row.question.qid, item.judge_score)
            if rng.random() < 0.12:
                score = min(5, max(1, score + rng.choice([-1, 1])))
            submit_label(campaign=campaign, user=person, item_id=item.pk, value=str(score), source="api")
    return (
        f"Campaign {RELEVANCE}: {campaign.items.count()} answers scored 1-5 for answer relevance by "
        f"{', '.join(p.username for p in people)} (1-2 is the failure class)."
    )

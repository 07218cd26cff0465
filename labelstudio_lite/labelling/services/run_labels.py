"""People's labels on a run's rows for one judge metric, with the design they were drawn with, for the gate.

The gate's judge correction (:mod:`evalcore.services.judge_correction`) asks, for each run of a
comparison, which rows people labelled on a metric and how they were sampled. The answer comes
from one campaign: the answer-level campaign on the metric over that run's rows with the most
final labels (the newest on a tie). Fresh held-out samples are left out (drawn from the rows an
earlier campaign left, they are not a random sample of the run's strata), and so are claim-level
campaigns (their labels are on claims, the gate's metric on answers).
"""

from __future__ import annotations

from evalcore.models import JudgeConfig, Run
from evalcore.services.judge_correction import RunLabels

from ..models import Campaign, Item
from ..selectors import final_labels
from .campaigns import population, stratum_label


def run_labels(config: JudgeConfig, run: Run, metric: str) -> RunLabels | str:
    """People's final labels on ``run``'s rows for ``metric`` and the campaign's strata, or why there are none."""
    campaigns = list(
        Campaign.objects.filter(run=run, metric=metric, run__judge_config=config, parent__isnull=True).order_by(
            "-created_at", "-pk"
        )
    )
    if not campaigns:
        return f"no labelling campaign on {metric} over run {run.name!r}"
    answers = [c for c in campaigns if c.unit == Campaign.Unit.ANSWER]
    if not answers:
        return (
            f"the campaigns on {metric} over run {run.name!r} label claims, and the gate decides answers: "
            "label whole answers (unit answer) to correct it"
        )
    best, best_labels, best_unlabelled = None, {}, 0
    for campaign in answers:
        finals = final_labels(campaign)
        rows = dict(Item.objects.filter(campaign=campaign).values_list("pk", "row_id"))
        labels = {
            rows[pk]: 1.0 if final.value == "supported" else 0.0
            for pk, final in finals.items()
            if final.value is not None
        }
        if best is None or len(labels) > len(best_labels):
            best, best_labels, best_unlabelled = campaign, labels, len(finals) - len(labels)
    frame = {
        c.row_id: (stratum_label(c.stratum), 1.0 if c.judge_supported else 0.0)
        for c in population(run, best.unit, best)
    }
    return RunLabels(
        campaign=best.name,
        rows=frame,
        labels={row: value for row, value in best_labels.items() if row in frame},
        unlabelled=best_unlabelled,
        scale=best.scale_words,
    )

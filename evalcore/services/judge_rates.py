"""Each judge metric's pass rate of each compared run, per slice: the judge's, prediction-powered, the labels alone.

The comparison page's table of corrected rates for every judge metric with a labelling campaign on
a run, not only faithfulness: people's labels on the run's rows come from the service the gate's
judge correction uses (:func:`.judge_correction.run_labels`: the run's answer-level campaign on the
metric with the most final labels, its strata slice x the judge's verdict, the judge's verdict by
the campaign's rule), and the estimate is the ``run`` design of
:func:`evalcore.engine.prediction_powered_mean` on the campaign's strata. A slice is a union of
strata, so its rows' labels are still a random sample within each of its strata.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from evalcore.engine import PredictionPowered, prediction_powered_mean

from ..models import JudgeConfig, Row, Run
from .judge_correction import RunLabels, run_labels
from .judge_fitness import CorrectedPassRate
from .summaries import slice_name

ALL = "all"


def labels_alone_half_width(r: PredictionPowered) -> float:
    """The half-width the labels alone would have as a simple random sample of as many labels, without the judge.

    The engine's own labels-only interval keeps the campaign's strata, and a campaign's strata are the judge's
    verdicts: on a pass rate that interval *is* the prediction-powered one (the judge's worth is in the strata).
    What people would get from their labels without the judge is the variance the engine compares with for the
    judge's worth (``effective_labels``): the prediction-powered half-width times ``sqrt(effective / labels)``,
    at the same quantile. With every row labelled there is no variance to compare, and the engine's is kept.
    """
    if not math.isfinite(r.effective_labels) or not r.labels:
        return r.labels_only.high - r.labels_only.estimate
    return (r.high - r.estimate) * math.sqrt(r.effective_labels / r.labels)


def _clip(value: float) -> float:
    return min(1.0, max(0.0, value))


def slice_rate(
    found: RunLabels, rows: Sequence[int], *, run: str, metric: str, name: str, confidence: float
) -> CorrectedPassRate:
    """One run's pass rate on ``metric`` over ``rows`` (a slice of the campaign's frame), corrected by its labels."""
    strata = [found.rows[r][0] for r in rows]
    verdicts = [found.rows[r][1] for r in rows]
    labelled = [i for i, r in enumerate(rows) if r in found.labels]
    common = dict(run=run, raw=sum(verdicts) / len(verdicts), items=len(rows), metric=metric, slice=name)
    common.update(campaign=found.campaign, labels=len(labelled))
    try:
        r = prediction_powered_mean(
            labels=[found.labels[rows[i]] for i in labelled],
            judge_labelled=[verdicts[i] for i in labelled],
            judge_rows=verdicts,
            labelled_strata=[strata[i] for i in labelled],
            row_strata=strata,
            design="run",
            confidence=confidence,
        )
    except ValueError as error:
        return CorrectedPassRate(corrected=None, low=None, high=None, note=f"not corrected: {error}", **common)
    alone = labels_alone_half_width(r)
    return CorrectedPassRate(
        corrected=r.estimate,
        low=_clip(r.low),
        high=_clip(r.high),
        note=r.note or "",
        method="prediction-powered",
        labels_only=r.labels_only.estimate,
        labels_only_low=_clip(r.labels_only.estimate - alone),
        labels_only_high=_clip(r.labels_only.estimate + alone),
        worth=r.in_words(),
        **common,
    )


def judge_metric_rates(
    config: JudgeConfig | None,
    runs: Sequence[Run],
    metrics: Sequence[str],
    *,
    by_slice: bool,
    confidence: float = 0.95,
) -> list[CorrectedPassRate]:
    """Per judge metric, run and slice ("all" first): the rate corrected by the run's own campaign on the metric.

    A run without an answer-level campaign on a metric has no row (the validation's transported rate,
    where there is one, is the comparison's other table); a slice whose strata hold too few labels has
    its raw rate and why it is not corrected.
    """
    if config is None:
        return []
    out = []
    for metric in metrics:
        for run in runs:
            found = run_labels(config, run, metric)
            if isinstance(found, str) or not found.rows:
                continue
            frame = sorted(found.rows)
            slices = {ALL: frame}
            if by_slice:
                # by run, not pk__in: a frame is every row of the run, past SQLite's limit on query parameters
                qtypes = dict(
                    Row.objects.filter(run=run).values_list("pk", "question__qtype").iterator(chunk_size=5000)
                )
                for row in frame:
                    slices.setdefault(slice_name(qtypes[row]), []).append(row)
            for name in [ALL, *sorted(n for n in slices if n != ALL)]:
                rate = slice_rate(found, slices[name], run=run.name, metric=metric, name=name, confidence=confidence)
                out.append(rate)
    return out

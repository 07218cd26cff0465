"""Which judge metric a campaign validates, and the label set people answer it with.

A campaign validates one named judge metric of its run: ``faithfulness`` (the judge's claim
verdicts, or its score on whole answers), ``answer_relevance``, ``correctness`` against the
question's reference answer, or any other judge score the run's rows carry. The label set is
binary (pass / fail in the metric's own words) or an ordinal scale such as 1–5 whose scores at
or below ``fail_at`` are the failure class.

The judge's side of an item comes from the run's rows: for faithfulness its claim verdicts (as
before); for any other metric its score. On a binary campaign the judge passes an answer whose
score is at least ``judge_pass_at``; on an ordinal campaign its score is put on the campaign's
scale (as it is when every score of the run lies on the scale, else linearly from 0–1, rounded
to the nearest point) and fails at the same threshold as people's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from evalcore.services.problems import UserFacingError

from ..models import Campaign

FAITHFULNESS = "faithfulness"

#: Per metric: the pass word, the fail word, what the page shows, the question asked.
KNOWN = {
    FAITHFULNESS: ("Supported", "Unsupported", Campaign.Shows.CONTEXT, "Is the answer supported by the context?"),
    "answer_relevance": ("Relevant", "Not relevant", Campaign.Shows.QUESTION, "Does the answer address the question?"),
    "correctness": (
        "Correct",
        "Incorrect",
        Campaign.Shows.REFERENCE,
        "Does the answer agree with the reference answer?",
    ),
}
#: Names tools give the same metrics (Ragas, DeepEval).
ALIASES = {
    "answer_relevancy": "answer_relevance",
    "relevance": "answer_relevance",
    "factual_correctness": "correctness",
    "answer_correctness": "correctness",
}
ORDINAL_QUESTION = "On a scale of {low} to {high}, {question}"


class LabelSetError(UserFacingError):
    pass


@dataclass(frozen=True, kw_only=True)
class LabelSet:
    """The metric a campaign validates and how people answer it (checked: see :func:`label_set`)."""

    metric: str
    scale: str = Campaign.Scale.BINARY
    pass_word: str = "Supported"
    fail_word: str = "Unsupported"
    shows: str = Campaign.Shows.CONTEXT
    scale_min: int | None = None
    scale_max: int | None = None
    fail_at: float | None = None
    judge_pass_at: float | None = None
    question: str = ""

    def fields(self) -> dict[str, Any]:
        """The campaign's fields for it."""
        return {
            "metric": self.metric,
            "scale": self.scale,
            "pass_word": self.pass_word,
            "fail_word": self.fail_word,
            "shows": self.shows,
            "scale_min": self.scale_min,
            "scale_max": self.scale_max,
            "fail_at": self.fail_at,
            "judge_pass_at": self.judge_pass_at,
        }


def kind_of(metric: str) -> str:
    """The known metric a name stands for (``answer_relevancy`` is answer relevance), else the name itself."""
    return ALIASES.get(metric, metric)


def label_set(
    *,
    metric: str = FAITHFULNESS,
    scale: str = Campaign.Scale.BINARY,
    scale_min: int | None = None,
    scale_max: int | None = None,
    fail_at: float | None = None,
    pass_word: str | None = None,
    fail_word: str | None = None,
    shows: str | None = None,
    judge_pass_at: float | None = None,
) -> LabelSet:
    """Check a label set and fill in the metric's own words (faithfulness keeps supported / unsupported).

    An ordinal scale needs whole-number ends (``scale_min`` < ``scale_max``, at most 11 points) and
    a threshold ``fail_at`` from the lowest point up to below the highest: scores at or below it fail.
    """
    metric = (metric or "").strip()
    if not metric:
        raise LabelSetError(
            "name the judge metric the campaign validates (faithfulness, answer_relevance, ...)", field="metric"
        )
    known = KNOWN.get(kind_of(metric), ("Pass", "Fail", Campaign.Shows.CONTEXT, f"Does the answer pass on {metric}?"))
    if scale not in Campaign.Scale.values:
        raise LabelSetError(
            f"the label set is 'binary' (pass / fail) or 'ordinal' (a scale), got {scale!r}", field="scale"
        )
    if shows is not None and shows not in Campaign.Shows.values:
        raise LabelSetError(f"the page shows one of {', '.join(Campaign.Shows.values)}, got {shows!r}", field="shows")
    if judge_pass_at is not None and not (isinstance(judge_pass_at, int | float) and math.isfinite(judge_pass_at)):
        raise LabelSetError(f"the judge's pass score must be a number, got {judge_pass_at!r}", field="judge_pass_at")
    if scale == Campaign.Scale.BINARY:
        if any(v is not None for v in (scale_min, scale_max, fail_at)):
            raise LabelSetError(
                "a binary label set has no scale or threshold: choose 'ordinal' for a scale", field="scale"
            )
        low = high = None
    else:
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (scale_min, scale_max)):
            raise LabelSetError(
                f"an ordinal scale needs whole-number ends, got {scale_min!r} to {scale_max!r}",
                field="scale_min" if not isinstance(scale_min, int) or isinstance(scale_min, bool) else "scale_max",
            )
        if not scale_min < scale_max <= scale_min + 10:
            raise LabelSetError(
                f"an ordinal scale runs from a low to a higher end, 2 to 11 points; got {scale_min}–{scale_max}",
                field="scale_max",
            )
        if not isinstance(fail_at, int | float) or isinstance(fail_at, bool) or not scale_min <= fail_at < scale_max:
            raise LabelSetError(
                f"the threshold defines the failure class: scores at or below it fail, so it lies from {scale_min} "
                f"to below {scale_max}; got {fail_at!r}",
                field="fail_at",
            )
        low, high = scale_min, scale_max
    return LabelSet(
        metric=metric,
        scale=scale,
        pass_word=(pass_word or known[0]).strip()[:40],
        fail_word=(fail_word or known[1]).strip()[:40],
        shows=shows or known[2],
        scale_min=low,
        scale_max=high,
        fail_at=float(fail_at) if scale == Campaign.Scale.ORDINAL else None,
        judge_pass_at=judge_pass_at,
        question=known[3]
        if scale == Campaign.Scale.BINARY
        else ORDINAL_QUESTION.format(low=low, high=high, question=known[3][0].lower() + known[3][1:]),
    )


def on_scale(scores: list[float], *, low: int, high: int) -> list[int]:
    """The judge's scores put on the campaign's scale: as they are when all lie on it, else linearly from 0–1.

    Raises :class:`LabelSetError` when they fit neither (name the scale the judge used).
    """
    if all(low <= s <= high for s in scores):
        return [int(math.floor(s + 0.5)) for s in scores]
    if all(0.0 <= s <= 1.0 for s in scores):
        return [int(math.floor(low + s * (high - low) + 0.5)) for s in scores]
    raise LabelSetError(
        f"the judge's scores run from {min(scores):g} to {max(scores):g}: neither on the scale {low}–{high} nor "
        f"from 0 to 1, so they cannot be put on the scale people use"
    )

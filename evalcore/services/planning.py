"""Plan before you measure: the planner's answers in words and JSON, for every door that asks.

Two questions, each one service call: how many labels a campaign needs (:func:`plan_labels`: the
half-widths a number of items gives, and the items a target half-width needs) and how many paired
questions a comparison needs (:func:`plan_questions`). The campaign form passes the run's strata;
the planner page and the ``plan`` command pass typed-in assumptions. Every answer states its
assumptions. The arithmetic is the engine's (:mod:`evalcore.engine.planning`).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from evalcore.engine import (
    LABEL_STATISTICS,
    JudgeAssumptions,
    LabelPlan,
    LabelsNeeded,
    QuestionsPlan,
    detectable_difference,
    judge_assumptions,
    label_plan,
    labels_needed,
    power_of,
    questions_needed,
)

from .problems import UserFacingError

#: Assumed when nothing better is known: a middling judge (the spec's worked example validated one at 12 %).
DEFAULT_MISS_RATE = 0.25
DEFAULT_FALSE_FAIL_RATE = 0.05
DEFAULT_TARGET = 0.05
STATISTIC_WORDS = {
    "miss_rate": "miss rate",
    "false_fail_rate": "false-fail rate",
    "kappa": "kappa",
    "corrected_pass_rate": "corrected pass rate",
}
METRIC_KINDS = ("pass_fail", "graded")


class PlanRefused(UserFacingError):
    """The assumptions cannot be planned with; the message says which and how to fix them."""


def _clean(value: Any) -> Any:
    """NaN and infinities as None, recursively: JSON has no NaN."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def spread(statistic: str, value: float) -> str:
    """A half-width as the planner says it: rates in points ("± 11 points"), kappa as is ("± 0.11")."""
    if value is None or not math.isfinite(value):
        return "± —"
    if statistic == "kappa":
        return f"± {value:.2f}"
    return f"± {100 * value:.0f} points" if value >= 0.01 else f"± {100 * value:.1f} points"


def about(items: int) -> str:
    """A count the way a plan quotes it: exact below 100, rounded up to 10 below 1,000, to 50 above."""
    step = 1 if items < 100 else 10 if items < 1000 else 50
    return f"{math.ceil(items / step) * step:,}"


@dataclass(frozen=True)
class LabelPlanning:
    """A label plan with its target, in words (``summary``, ``heldout``, ``assumptions``) and numbers (``as_dict``)."""

    plan: LabelPlan
    needed: LabelsNeeded
    source: str  # where the failure share came from: "typed in" or "the run's judge verdicts"
    judge_fail_share: float

    @property
    def summary(self) -> str:
        """ "240 items: miss rate ± 11 points, kappa ± 0.11, ...; for ± 5 points on the miss rate you need about 1,150"."""
        report = self.plan.report
        head = (
            f"{self.plan.items:,} items: miss rate {spread('miss_rate', report.miss_rate)}, kappa "
            f"{spread('kappa', report.kappa)}, corrected pass rate {spread('corrected_pass_rate', report.corrected_pass_rate)}"
        )
        return f"{head}; {self.target_sentence}"

    @property
    def target_sentence(self) -> str:
        """What the target needs, or how close the run can come."""
        needed = self.needed
        what = f"{spread(needed.statistic, needed.target)} on the {STATISTIC_WORDS[needed.statistic]}"
        if needed.split == "heldout":
            what += " of a held-out re-measurement"
        if needed.items is None:
            return (
                f"{what} is out of reach: every one of the run's {needed.available:,} items gives "
                f"{spread(needed.statistic, needed.best)}"
            )
        labels = f" ({about(needed.labels)} labels at {self.plan.overlap} per item)" if self.plan.overlap > 1 else ""
        return f"for {what} you need about {about(needed.items)} items{labels}"

    @property
    def heldout(self) -> str:
        """The held-out split's own precision, for a re-measurement of a tuned judge."""
        held = self.plan.heldout
        if held is None:
            return "nothing is held out: a tuned judge cannot be re-measured on fresh labels"
        return (
            f"re-measuring on the {held.items:,} held-out items: miss rate {spread('miss_rate', held.miss_rate)}, "
            f"kappa {spread('kappa', held.kappa)}"
        )

    @property
    def assumptions(self) -> str:
        """The truth the plan assumes, in words."""
        a = self.plan.assumptions
        source = (
            f" (from the run: the judge fails {100 * self.judge_fail_share:.0f} % of its items)"
            if self.source != "typed in"
            else ""
        )
        run = "a large run" if self.plan.population is None else f"a run of {self.plan.population:,} items"
        weighting = "weighted back to the run" if self.plan.weighted else "counted as it is (the sample weighs itself)"
        return (
            f"people would fail {100 * a.failure_share:.1f} % of items{source}; the judge misses "
            f"{100 * a.miss_rate:.0f} % of those and fails {100 * a.false_fail_rate:.0f} % of the rest (kappa "
            f"{a.kappa:.2f}); {run}; each judge verdict gets at least a quarter of the sample, "
            f"{self.plan.judge_fail_items:,} of the items are ones the judge failed, and the labels are {weighting}; "
            f"every item gets a final label (can't-tell and unresolved conflicts drop items); "
            f"{100 * self.plan.confidence:.0f} % intervals"
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: the numbers, the words and the assumptions."""
        plan = asdict(self.plan)
        plan["assumptions"] = {**plan["assumptions"], "judge_fail_share": self.judge_fail_share, "source": self.source}
        plan["assumptions"]["kappa"] = self.plan.assumptions.kappa
        return _clean(
            {
                **plan,
                "needed": asdict(self.needed),
                "summary": self.summary,
                "heldout_summary": self.heldout,
                "assumptions_in_words": self.assumptions,
            }
        )


def _assumptions(
    *, miss_rate: float, false_fail_rate: float, failure_share: float | None, judge_fail_share: float | None
) -> JudgeAssumptions:
    try:
        return judge_assumptions(
            miss_rate=miss_rate,
            false_fail_rate=false_fail_rate,
            failure_share=failure_share,
            judge_fail_share=judge_fail_share,
        )
    except ValueError as error:
        raise PlanRefused(str(error)) from None


def plan_labels(
    *,
    size: int,
    target: float = DEFAULT_TARGET,
    statistic: str = "miss_rate",
    split: str = "report",
    miss_rate: float = DEFAULT_MISS_RATE,
    false_fail_rate: float = DEFAULT_FALSE_FAIL_RATE,
    failure_share: float | None = None,
    strata: Mapping[tuple[Hashable, bool], int] | None = None,
    population: int | None = None,
    heldout_fraction: float = 0.3,
    overlap: int = 1,
    confidence: float = 0.95,
) -> LabelPlanning:
    """Plan a labelling campaign: the half-widths ``size`` items give, and the items ``target`` needs.

    Give the run's ``strata`` (``(slice, judge passed) -> items``: the judge's fail share is read off
    them) or a typed-in ``failure_share`` (and optionally the run's ``population``).
    """
    if statistic not in LABEL_STATISTICS:
        raise PlanRefused(f"the target is on one of {', '.join(LABEL_STATISTICS)}, not {statistic!r}")
    if strata is not None:
        total = sum(strata.values())
        if not total:
            raise PlanRefused("the run has no items to label")
        judge_fail = sum(n for (_, passed), n in strata.items() if not passed) / total
        assumptions = _assumptions(
            miss_rate=miss_rate, false_fail_rate=false_fail_rate, failure_share=None, judge_fail_share=judge_fail
        )
        source = "the run's judge verdicts"
    else:
        if failure_share is None:
            raise PlanRefused("give the share of items people would fail (the failure class), or plan from a run")
        assumptions = _assumptions(
            miss_rate=miss_rate, false_fail_rate=false_fail_rate, failure_share=failure_share, judge_fail_share=None
        )
        source = "typed in"
    options: dict[str, Any] = dict(
        assumptions=assumptions,
        strata=strata,
        population=population,
        heldout_fraction=heldout_fraction,
        overlap=overlap,
        confidence=confidence,
    )
    try:
        plan = label_plan(size, **options)
        needed = labels_needed(target, statistic=statistic, split=split, **options)
    except ValueError as error:
        raise PlanRefused(str(error)) from None
    return LabelPlanning(plan=plan, needed=needed, source=source, judge_fail_share=assumptions.judge_fail_share)


@dataclass(frozen=True)
class QuestionsPlanning:
    """A paired-question plan in words and numbers, with what the questions there are can do."""

    plan: QuestionsPlan
    kind: str  # "pass_fail" or "graded"
    detectable: float | None  # the smallest change that passes with the power at ``available`` questions
    power_available: float | None  # the power the available questions have for the assumed change

    @property
    def summary(self) -> str:
        """The plan in one sentence."""
        return self.plan.sentence()

    @property
    def available_sentence(self) -> str:
        """What the questions there are can do."""
        if self.plan.available is None or self.power_available is None:
            return ""
        words = (
            f"with the {self.plan.available:,} questions there are, the gate would {self.plan.outcome} "
            f"{100 * self.power_available:.0f} % of the time if the true change is {self.plan.change:+.3f}"
        )
        if self.detectable is not None:
            words += (
                f"; a true change of {self.detectable:+.3f} or better passes {100 * self.plan.power:.0f} % of the time"
            )
        return words

    @property
    def assumptions(self) -> str:
        """The truth the plan assumes, in words."""
        p = self.plan
        spread_words = (
            f"{100 * p.discordance:.0f} % of questions flip between the runs (pass/fail scores)"
            if p.discordance is not None
            else f"per-question differences have a standard deviation of {p.sd:.3f}"
        )
        return (
            f"a true change of {p.change:+.3f} (candidate minus baseline, in the better direction); {spread_words}; "
            f"the gate's margin {p.margin:g}; a paired {100 * p.confidence:.0f} % interval; "
            f"{100 * p.power:.0f} % power; questions independent of each other"
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: the numbers, the words and the assumptions."""
        return _clean(
            {
                **asdict(self.plan),
                "kind": self.kind,
                "detectable_change": self.detectable,
                "power_with_available": self.power_available,
                "summary": self.summary,
                "available_summary": self.available_sentence,
                "assumptions_in_words": self.assumptions,
            }
        )


def plan_questions(
    *,
    change: float = 0.0,
    margin: float = 0.02,
    kind: str = "pass_fail",
    discordance: float | None = None,
    sd: float | None = None,
    power: float = 0.8,
    confidence: float = 0.95,
    available: int | None = None,
) -> QuestionsPlanning:
    """Plan a paired comparison: the questions that settle a true ``change`` at ``margin`` with ``power``.

    ``kind`` is ``"pass_fail"`` (give the ``discordance``, the share of questions that flip) or
    ``"graded"`` (give ``sd``, the standard deviation of the per-question differences).
    """
    if kind not in METRIC_KINDS:
        raise PlanRefused(f"the metric kind is pass_fail or graded, not {kind!r}")
    if kind == "pass_fail" and discordance is None:
        raise PlanRefused("a pass/fail metric needs the share of questions that flip between the runs (discordance)")
    if kind == "graded" and sd is None:
        raise PlanRefused("a graded metric needs the standard deviation of the per-question differences (sd)")
    try:
        plan = questions_needed(
            change,
            margin=margin,
            sd=sd if kind == "graded" else None,
            discordance=discordance if kind == "pass_fail" else None,
            confidence=confidence,
            power=power,
            available=available,
        )
    except ValueError as error:
        raise PlanRefused(str(error)) from None
    detectable = reach = None
    if available:
        reach = power_of(available, change=plan.change, margin=plan.margin, sd=plan.sd, confidence=confidence)
        detectable = detectable_difference(available, sd=plan.sd, confidence=confidence, power=power) - plan.margin
    return QuestionsPlanning(plan=plan, kind=kind, detectable=detectable, power_available=reach)

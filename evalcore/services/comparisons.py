"""Paired comparisons of two runs and the release gate, logged as decisions.

Only like with like: both runs on the same frozen eval set version, paired on the questions
both answered; judge metrics only when both runs were scored by the same pinned judge config
(otherwise the tool says to re-score the baseline with the new judge first: a judge change is a
metric migration).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import pandas as pd
from django.conf import settings
from django.db import transaction

from evalcore.engine import REVIEW, GateDecision, GateReport, gate_frame, overall_status, settle_review

from ..models import Comparison, GateDecisionRecord, Run
from ..selectors import run_rows_frame
from .judge_fitness import JudgeValidation, check_judge_policy, corrected_pass_rates, judge_validation
from .problems import UserFacingError
from .scoring import is_judge_metric

Progress = Callable[[int, int | None, str], None]
SLICE_COLUMN = "type"
#: The power a review decision's "what would settle this" is planned for.
SETTLE_POWER = 0.8


class ComparisonRefused(UserFacingError):
    """The two runs cannot be compared as asked; the message says why and what to do."""


@dataclass(frozen=True)
class ComparisonOutcome:
    comparison: Comparison
    report: GateReport
    excluded: dict[str, str]


def _noop(done: int, total: int | None, message: str) -> None:
    return None


def run_metrics(run: Run) -> list[str]:
    return list(run.summary.get("metrics", []))


def comparable_metrics(
    base: Run, candidate: Run, requested: Sequence[str] | None = None
) -> tuple[list[str], dict[str, str]]:
    """Return the metrics both runs can be compared on, and why each other one is left out."""
    base_metrics, cand_metrics = run_metrics(base), run_metrics(candidate)
    wanted = list(requested) if requested else [m for m in base_metrics if m in cand_metrics]
    excluded: dict[str, str] = {}
    same_judge = base.judge_config_id == candidate.judge_config_id
    chosen = []
    for metric in wanted:
        if metric not in base_metrics or metric not in cand_metrics:
            missing = base.name if metric not in base_metrics else candidate.name
            excluded[metric] = f"run {missing!r} has no {metric} scores"
            continue
        if is_judge_metric(metric) and not same_judge:
            excluded[metric] = (
                f"scored by different judge configs ({base.judge_config or 'none'} vs {candidate.judge_config or 'none'}): "
                f"a judge change shifts every score. Re-score the baseline with the candidate's judge first, then compare"
            )
            continue
        chosen.append(metric)
    for metric in set(base_metrics) ^ set(cand_metrics):
        if not requested and metric not in excluded:
            owner = base.name if metric in base_metrics else candidate.name
            excluded[metric] = f"only run {owner!r} has {metric} scores (a different k or metric set)"
    return chosen, excluded


def comparison_check(
    *, base: Run, candidate: Run, metrics: Sequence[str] | None = None, slice_by: str | None = SLICE_COLUMN
) -> tuple[list[str], dict[str, str]]:
    """Refuse a comparison that cannot be made, with the reason; return the metrics to compare and why others are left out.

    Called before a gate job is accepted (so a page or the API answers at once) and again when it runs.
    """
    if base.pk == candidate.pk:
        raise ComparisonRefused("the baseline and the candidate are the same run; pick two runs")
    if base.version_id != candidate.version_id:
        raise ComparisonRefused(
            f"{base.name!r} ran on {base.version.label} and {candidate.name!r} on {candidate.version.label}: "
            f"comparisons are paired on one frozen eval set version. Run the baseline on {candidate.version.label} first"
        )
    if slice_by not in (None, SLICE_COLUMN):
        raise ComparisonRefused(f"slices are by question type: use slice_by='{SLICE_COLUMN}' or none, not {slice_by!r}")
    chosen, excluded = comparable_metrics(base, candidate, metrics)
    if not chosen:
        reasons = "; ".join(f"{m}: {why}" for m, why in excluded.items()) or "the runs share no metrics"
        raise ComparisonRefused(f"nothing to compare: {reasons}")
    return chosen, excluded


def check_margins(*, margin: float | None = None, margins: Mapping[str, float] | None = None) -> None:
    """Refuse a margin that is not a finite number of 0 or more (the largest drop tolerated)."""
    named = {**({"every metric": margin} if margin is not None else {}), **(margins or {})}
    for metric, value in named.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ComparisonRefused(
                f"the margin for {metric} must be 0 or more (a tolerated drop) and finite, got {value!r}"
            )


def compare_runs(
    *,
    base: Run,
    candidate: Run,
    metrics: Sequence[str] | None = None,
    slice_by: str | None = SLICE_COLUMN,
    margin: float | None = None,
    margins: Mapping[str, float] | None = None,
    lower_is_better: Sequence[str] = (),
    iterations: int | None = None,
    seed: int | None = None,
    confidence: float = 0.95,
    judge_policy: str | None = None,
    user: Any = None,
    progress: Progress = _noop,
) -> ComparisonOutcome:
    """Gate ``candidate`` against ``base`` per metric and slice; log and return the decisions.

    Decisions on judge metrics carry the validation of the judge that scored both runs, and the
    judge policy (``GATE_JUDGE_POLICY`` unless given) decides what an unvalidated or unfit judge
    does to them (see :mod:`.judge_fitness`).
    """
    chosen, excluded = comparison_check(base=base, candidate=candidate, metrics=metrics, slice_by=slice_by)
    policy = check_judge_policy(settings.GATE_JUDGE_POLICY if judge_policy is None else judge_policy)
    default_margin = settings.GATE_DEFAULT_MARGIN if margin is None else float(margin)
    per_metric = {m: float((margins or {}).get(m, default_margin)) for m in chosen}
    check_margins(margins=per_metric)
    iterations = settings.GATE_ITERATIONS if iterations is None else int(iterations)
    seed = settings.GATE_SEED if seed is None else int(seed)

    progress(0, len(chosen) + 1, "loading rows")
    base_frame = run_rows_frame(base)
    cand_frame = run_rows_frame(candidate)
    if len(base_frame.index.intersection(cand_frame.index)) == 0:
        raise ComparisonRefused(
            f"{base.name!r} and {candidate.name!r} answered no question in common: comparisons are paired on the "
            f"questions both runs answered. Run both on the same questions first"
        )
    decisions = []
    notes: list[str] = []
    for i, metric in enumerate(chosen, start=1):
        report = gate_frame(
            base_frame[[SLICE_COLUMN, metric]],
            cand_frame[[metric]],
            metrics=[metric],
            slice_by=SLICE_COLUMN if slice_by else None,
            margin=per_metric,
            higher_is_better={metric: metric not in lower_is_better},
            iterations=iterations,
            seed=seed,
            confidence=confidence,
        )
        if not report.decisions:  # never let a metric that was not compared count as a pass
            excluded[metric] = (
                "no question is scored on it in both runs (for example abstention when no question is unanswerable)"
            )
        decisions.extend(report.decisions)
        notes.extend(n for n in report.notes if n not in notes)
        progress(i, len(chosen) + 1, f"gated {metric}")
    if not decisions:
        raise ComparisonRefused("nothing to compare: " + "; ".join(f"{m}: {why}" for m, why in excluded.items()))
    validation = judge_validation(base.judge_config) if any(is_judge_metric(d.metric) for d in decisions) else None
    data_status = {(d.metric, d.slice): d.status for d in decisions}
    decisions = [_under_judge_policy(d, validation, policy) if is_judge_metric(d.metric) else d for d in decisions]
    chosen = [m for m in chosen if m not in excluded]
    per_metric = {m: per_metric[m] for m in chosen}
    to_settle = {
        (d.metric, d.slice): _to_settle(d, data_status[(d.metric, d.slice)], base_frame, cand_frame, confidence)
        for d in decisions
        if d.status == REVIEW
    }
    report = GateReport(
        decisions=tuple(decisions),
        overall=overall_status([d.status for d in decisions]),
        n_paired=len(base_frame.index.intersection(cand_frame.index)),
        notes=tuple(notes),
    )
    with transaction.atomic():
        comparison = Comparison.objects.create(
            base=base,
            candidate=candidate,
            metrics=chosen,
            slice_by=slice_by or "",
            margins=per_metric,
            iterations=iterations,
            seed=seed,
            confidence=confidence,
            overall=report.overall,
            n_paired=report.n_paired,
            notes=list(report.notes),
            excluded_metrics=excluded,
            judge_policy=policy,
            judge_rates=[asdict(rate) for rate in corrected_pass_rates(base.judge_config, [base, candidate])]
            if validation
            else [],
            created_by=user if getattr(user, "pk", None) else None,
        )
        GateDecisionRecord.objects.bulk_create(
            [
                GateDecisionRecord(
                    comparison=comparison,
                    base=base,
                    candidate=candidate,
                    metric=d.metric,
                    slice=d.slice,
                    status=d.status,
                    mean=d.mean,
                    low=_finite(d.low),
                    high=_finite(d.high),
                    base_mean=_finite(d.base_mean),
                    cand_mean=_finite(d.cand_mean),
                    margin=d.margin,
                    n=d.n,
                    iterations=d.iterations,
                    seed=d.seed,
                    confidence=d.confidence,
                    higher_is_better=d.higher_is_better,
                    message=d.message,
                    data_status=data_status[(d.metric, d.slice)],
                    judge_validation=validation.as_dict()
                    if validation is not None and is_judge_metric(d.metric)
                    else None,
                    to_settle=to_settle.get((d.metric, d.slice)),
                    created_by=comparison.created_by,
                )
                for d in report.decisions
            ]
        )
    progress(len(chosen) + 1, len(chosen) + 1, "done")
    return ComparisonOutcome(comparison, report, excluded)


def _under_judge_policy(decision: GateDecision, validation: JudgeValidation | None, policy: str) -> GateDecision:
    """Apply the judge policy to a decision on a judge metric: an unfit or unvalidated judge cannot pass or block alone."""
    if validation is None or validation.fit or policy == "off":
        return decision
    if policy == "warn" or decision.status == REVIEW:
        return replace(decision, message=f"{decision.message} (warning: {validation.reason})")
    data_alone = f"the data alone say {decision.status}: {decision.message}"
    return replace(decision, status=REVIEW, message=f"{decision.metric}: {validation.reason}; {data_alone}")


def _to_settle(
    decision: GateDecision, data_status: str, base: pd.DataFrame, cand: pd.DataFrame, confidence: float
) -> dict[str, Any]:
    """What would settle a review decision: the planner's paired questions at the observed change and spread, in words.

    A decision sent to review by the judge policy (the data alone passed or blocked) is settled by
    validating the judge, not by more questions; one with fewer than two paired questions has no spread to plan from.
    """
    if data_status != REVIEW:
        return {
            "sentence": f"more paired questions would not settle this: the data alone say {data_status}; it is in review "
            "because of the judge that scored it. Validate that judge against people (a labelling campaign and its "
            "judge report), or re-score both runs with a judge that is validated and fit",
            "questions": None,
        }
    common = base.index.intersection(cand.index, sort=False)
    b = pd.to_numeric(base.loc[common, decision.metric], errors="coerce")
    c = pd.to_numeric(cand.loc[common, decision.metric], errors="coerce")
    in_slice = _in_slice(base.loc[common], decision.slice)
    use = (b.notna() & c.notna() & in_slice).to_numpy()
    scored = int(
        (pd.to_numeric(base[decision.metric], errors="coerce").notna() & _in_slice(base, decision.slice)).sum()
    )
    scope = "the eval set" if decision.slice == "all" else f"slice {decision.slice}"
    if use.sum() < 2:
        return {
            "sentence": f"too few paired questions to plan from ({int(use.sum())}); {scope} has {scored:,} scored on "
            f"{decision.metric}: score more of them in both runs",
            "questions": None,
        }
    plan = settle_review(
        b.to_numpy()[use],
        c.to_numpy()[use],
        margin=decision.margin,
        higher_is_better=decision.higher_is_better,
        confidence=confidence,
        power=SETTLE_POWER,
        available=scored,
    )
    return {**asdict(plan), "sentence": plan.sentence(observed=True, scope=scope)}


#: What settles reviews the judge policy made, said once for all of them.
JUDGE_REVIEW_ADVICE = (
    "More paired questions would not settle these: validate that judge against people (a labelling campaign and its "
    "judge report), or re-score both runs with a judge that is validated and fit"
)


@dataclass(frozen=True)
class ReviewsToSettle:
    """A comparison's review decisions as a page or a table says what would settle them.

    ``by_data`` are the decisions the data left open, each with its own plan (``to_settle``);
    ``by_judge`` names, per metric, the slices the judge policy sent to review (one sentence
    covers them all: validate the judge).
    """

    by_data: list[Any]
    by_judge: dict[str, list[str]]

    @property
    def judge_sentence(self) -> str:
        """The sentence for the reviews the judge policy made ("" when there are none)."""
        if not self.by_judge:
            return ""
        named = "; ".join(
            f"{metric} ({', '.join('overall' if s == 'all' else s for s in slices)})"
            for metric, slices in self.by_judge.items()
        )
        return f"in review because of the judge that scored them, whatever the data say: {named}. {JUDGE_REVIEW_ADVICE}"


def reviews_to_settle(decisions: Sequence[Any]) -> ReviewsToSettle:
    """Sort review decisions (records or :func:`comparison_as_dict` dicts) by what settles them."""

    def get(decision: Any, key: str) -> Any:
        return decision[key] if isinstance(decision, Mapping) else getattr(decision, key)

    by_data, by_judge = [], {}
    for d in decisions:
        if get(d, "status") != REVIEW or not get(d, "to_settle"):
            continue
        if get(d, "data_status") == REVIEW:
            by_data.append(d)
        else:
            by_judge.setdefault(get(d, "metric"), []).append(get(d, "slice"))
    return ReviewsToSettle(by_data, by_judge)


def _in_slice(frame: pd.DataFrame, name: str) -> pd.Series:
    """Which questions of a run's frame are in a slice ("all", or a question type as :func:`gate_frame` names it)."""
    if name == "all" or SLICE_COLUMN not in frame.columns:
        return pd.Series(True, index=frame.index)
    return frame[SLICE_COLUMN].astype("string").fillna("(none)") == name


def _finite(value: float) -> float | None:
    return None if value != value else float(value)  # NaN -> None


def comparison_as_dict(comparison: Comparison) -> dict[str, Any]:
    """Every decision of a logged comparison with its interval (the JSON the API and CLI print)."""
    return {
        "id": comparison.pk,
        "base": {"id": comparison.base_id, "name": comparison.base.name},
        "candidate": {"id": comparison.candidate_id, "name": comparison.candidate.name},
        "eval_set": comparison.base.version.label,
        "overall": comparison.overall,
        "n_paired": comparison.n_paired,
        "iterations": comparison.iterations,
        "seed": comparison.seed,
        "confidence": comparison.confidence,
        "margins": comparison.margins,
        "excluded_metrics": comparison.excluded_metrics,
        "notes": comparison.notes,
        "judge_policy": comparison.judge_policy,
        "judge_rates": comparison.judge_rates,
        "created_at": comparison.created_at.isoformat(),
        "decisions": [
            {
                "metric": d.metric,
                "slice": d.slice,
                "status": d.status,
                "mean": d.mean,
                "low": d.low,
                "high": d.high,
                "base_mean": d.base_mean,
                "cand_mean": d.cand_mean,
                "margin": d.margin,
                "n": d.n,
                "higher_is_better": d.higher_is_better,
                "message": d.message,
                "data_status": d.data_status,
                "judge": d.judge_validation,
                "to_settle": d.to_settle,
            }
            for d in comparison.decisions.all()
        ],
    }

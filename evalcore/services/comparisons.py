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

import numpy as np
import pandas as pd
from django.conf import settings
from django.db import transaction

from evalcore.engine import BLOCK, REVIEW, GateDecision, GateReport, gate_frame, overall_status, settle_review
from evalcore.engine.multiplicity import CORRECTIONS

from ..models import Comparison, GateDecisionRecord, Run
from ..selectors import CHANGED_KEPT, run_rows_frame
from .comparison_dicts import _finite, comparison_as_dict  # noqa: F401 - comparison_as_dict is read from here
from .judge_correction import (
    check_judge_correction,
    is_corrected,
    judge_corrections,
    labels_to_settle,
    with_corrections,
)
from .judge_fitness import JudgeValidation, check_judge_policy, corrected_pass_rates, judge_validation
from .judge_rates import judge_metric_rates
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


def check_gate_correction(correction: str) -> str:
    """Refuse a family-wise correction the gate does not know."""
    if correction not in CORRECTIONS:
        raise ComparisonRefused(
            f"the correction must be one of {', '.join(CORRECTIONS)} (holm: Holm's step-down over every metric and "
            f"slice; none: each decision alone), got {correction!r}"
        )
    return correction


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
    correction: str | None = None,
    judge_correction: str | None = None,
    user: Any = None,
    progress: Progress = _noop,
) -> ComparisonOutcome:
    """Gate ``candidate`` against ``base`` per metric and slice; log and return the decisions.

    Decisions on judge metrics carry the validation of the judge that scored both runs, and the
    judge policy (``GATE_JUDGE_POLICY`` unless given) decides what an unvalidated or unfit judge
    does to them (see :mod:`.judge_fitness`). A "block" is corrected for the number of decisions
    (``GATE_CORRECTION`` unless given: Holm's step-down over every metric and slice). With
    ``judge_correction="ppi"`` a judge metric's cells are decided on the prediction-powered
    difference where people labelled both runs' rows (see :mod:`.judge_correction`).
    """
    policy, correction = _policy_and_correction(judge_policy=judge_policy, correction=correction)
    judge_correction = check_judge_correction(judge_correction or "none")
    chosen, excluded = comparison_check(base=base, candidate=candidate, metrics=metrics, slice_by=slice_by)
    per_metric, iterations, seed = _margins_and_bootstrap(
        chosen, margin=margin, margins=margins, iterations=iterations, seed=seed
    )

    progress(0, 3, "loading rows")
    base_frame, cand_frame, common = _paired_frames(base, candidate, chosen)
    paired = _Paired.of(base_frame, cand_frame, common)
    directions = {metric: metric not in lower_is_better for metric in chosen}
    corrections, evidence = ({}, {})
    if judge_correction == "ppi":
        corrections, evidence = judge_corrections(
            base=base,
            candidate=candidate,
            metrics=[m for m in chosen if is_judge_metric(m)],
            base_common=paired.base_common,
            cand_common=paired.cand_common,
            slices=paired.slices if slice_by else {"all": paired.slices["all"]},
            higher_is_better=directions,
            confidence=confidence,
        )
    progress(1, 3, f"bootstrapping {len(chosen)} metrics")
    # one call for every metric: their bootstraps share one pool of threads (the same numbers as one by one)
    gated = gate_frame(
        base_frame[[SLICE_COLUMN, *chosen]],
        cand_frame[chosen],
        metrics=chosen,
        slice_by=SLICE_COLUMN if slice_by else None,
        margin=per_metric,
        higher_is_better=directions,
        iterations=iterations,
        seed=seed,
        confidence=confidence,
        correction=correction,
        evidence=evidence or None,
    )
    decisions, corrected = with_corrections(list(gated.decisions), corrections, gated.replaced)
    notes = list(gated.notes)
    _exclude_the_uncompared(chosen, decisions, excluded)
    progress(2, 3, "storing decisions")
    validations = {
        d.metric: judge_validation(base.judge_config, d.metric) for d in decisions if is_judge_metric(d.metric)
    }
    data_status = {(d.metric, d.slice): d.status for d in decisions}
    decisions = [
        _under_judge_policy(d, validations[d.metric], policy)
        if d.metric in validations and not is_corrected(corrected, d)
        else d
        for d in decisions
    ]
    chosen = [m for m in chosen if m not in excluded]
    per_metric = {m: per_metric[m] for m in chosen}
    to_settle = {
        (d.metric, d.slice): labels_to_settle(d)
        if is_corrected(corrected, d)
        else _to_settle(d, data_status[(d.metric, d.slice)], paired, confidence, gated.family_size)
        for d in decisions
        if d.status == REVIEW
    }
    changed = {metric: paired.changed(metric) for metric in chosen}
    report = GateReport(
        decisions=tuple(decisions),
        overall=overall_status([d.status for d in decisions]),
        n_paired=len(common),
        notes=tuple(notes),
        family_size=gated.family_size,
        correction=gated.correction,
    )
    comparison = Comparison(
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
        changed=changed,
        judge_policy=policy,
        judge_correction=judge_correction,
        correction=report.correction,
        family_size=report.family_size,
        judge_rates=[asdict(rate) for rate in _judge_rates(base, candidate, list(validations), slice_by, confidence)],
        created_by=user if getattr(user, "pk", None) else None,
    )
    _store_comparison(
        comparison,
        report,
        validations=validations,
        data_status=data_status,
        to_settle=to_settle,
        corrections=corrected,
    )
    progress(3, 3, "done")
    return ComparisonOutcome(comparison, report, excluded)


def _judge_rates(base: Run, candidate: Run, metrics: list[str], slice_by: str | None, confidence: float) -> list:
    """The validation's corrected pass rates of both runs, then every judge metric's per run and slice by its campaign."""
    if not metrics:
        return []
    runs = [base, candidate]
    by_campaign = judge_metric_rates(base.judge_config, runs, metrics, by_slice=bool(slice_by), confidence=confidence)
    return corrected_pass_rates(base.judge_config, runs) + by_campaign


def _policy_and_correction(*, judge_policy: str | None, correction: str | None) -> tuple[str, str]:
    """The judge policy and the family-wise correction, ``GATE_JUDGE_POLICY`` and ``GATE_CORRECTION`` unless given;
    refused before anything is read."""
    policy = check_judge_policy(settings.GATE_JUDGE_POLICY if judge_policy is None else judge_policy)
    correction = check_gate_correction(settings.GATE_CORRECTION if correction is None else correction)
    return policy, correction


def _margins_and_bootstrap(
    chosen: Sequence[str],
    *,
    margin: float | None,
    margins: Mapping[str, float] | None,
    iterations: int | None,
    seed: int | None,
) -> tuple[dict[str, float], int, int]:
    """Each chosen metric's margin (``margins``, else ``margin``, else ``GATE_DEFAULT_MARGIN``), checked; the
    bootstrap's iterations and seed (``GATE_ITERATIONS`` and ``GATE_SEED`` unless given)."""
    default_margin = settings.GATE_DEFAULT_MARGIN if margin is None else float(margin)
    per_metric = {m: float((margins or {}).get(m, default_margin)) for m in chosen}
    check_margins(margins=per_metric)
    iterations = settings.GATE_ITERATIONS if iterations is None else int(iterations)
    seed = settings.GATE_SEED if seed is None else int(seed)
    return per_metric, iterations, seed


def _paired_frames(base: Run, candidate: Run, chosen: list[str]) -> tuple[pd.DataFrame, pd.DataFrame, pd.Index]:
    """Both runs' rows (scores on ``chosen``, slice and row id) and the questions both answered; refuse none."""
    base_frame = run_rows_frame(base, metrics=chosen, row_ids=True)
    cand_frame = run_rows_frame(candidate, metrics=chosen, row_ids=True)
    common = base_frame.index.intersection(cand_frame.index, sort=False)
    if len(common) == 0:
        raise ComparisonRefused(
            f"{base.name!r} and {candidate.name!r} answered no question in common: comparisons are paired on the "
            f"questions both runs answered. Run both on the same questions first"
        )
    return base_frame, cand_frame, common


def _exclude_the_uncompared(chosen: list[str], decisions: list[GateDecision], excluded: dict[str, str]) -> None:
    """Add to ``excluded`` each chosen metric the gate decided nothing on; refuse when it decided nothing at all."""
    for metric in chosen:
        if not any(d.metric == metric for d in decisions):  # never let a metric that was not compared count as a pass
            excluded[metric] = (
                "no question is scored on it in both runs (for example abstention when no question is unanswerable)"
            )
    if not decisions:
        raise ComparisonRefused("nothing to compare: " + "; ".join(f"{m}: {why}" for m, why in excluded.items()))


def _store_comparison(
    comparison: Comparison,
    report: GateReport,
    *,
    validations: Mapping[str, JudgeValidation],
    data_status: dict[tuple[str, str], str],
    to_settle: dict[tuple[str, str], Any],
    corrections: dict[tuple[str, str], dict[str, Any]],
) -> None:
    """Save the (unsaved) comparison and one record per decision of its report, in one transaction."""
    with transaction.atomic():
        comparison.save(force_insert=True)
        GateDecisionRecord.objects.bulk_create(
            [
                _decision_record(
                    d,
                    comparison=comparison,
                    validation=validations.get(d.metric),
                    data_status=data_status,
                    to_settle=to_settle,
                    correction=corrections.get((d.metric, d.slice)),
                )
                for d in report.decisions
            ]
        )


def _decision_record(
    d: GateDecision,
    *,
    comparison: Comparison,
    validation: JudgeValidation | None,
    data_status: dict[tuple[str, str], str],
    to_settle: dict[tuple[str, str], Any],
    correction: dict[str, Any] | None = None,
) -> GateDecisionRecord:
    """The record of one decision (unsaved); the judge's validation rides on judge metrics only."""
    return GateDecisionRecord(
        comparison=comparison,
        base=comparison.base,
        candidate=comparison.candidate,
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
        p_value=_finite(d.p_value),
        p_adjusted=_finite(d.p_adjusted),
        interval_method=d.interval_method,
        test_method=d.test_method,
        iterations=d.iterations,
        seed=d.seed,
        confidence=d.confidence,
        higher_is_better=d.higher_is_better,
        message=d.message,
        data_status=data_status[(d.metric, d.slice)],
        judge_validation=validation.as_dict() if validation is not None and is_judge_metric(d.metric) else None,
        to_settle=to_settle.get((d.metric, d.slice)),
        judge_correction=correction,
        created_by=comparison.created_by,
    )


def _under_judge_policy(decision: GateDecision, validation: JudgeValidation | None, policy: str) -> GateDecision:
    """Apply the judge policy to a decision on a judge metric: a judge not certified trusted on the metric (or
    untrusted on the decision's slice) cannot pass or block alone."""
    if validation is None or policy == "off":
        return decision
    untrusted_slice = validation.slice_untrusted(decision.slice) if validation.fit else None
    if untrusted_slice is not None:
        reason = f"judge {validation.judge} is untrusted on slice {decision.slice}: {untrusted_slice['reason']}"
        if policy == "warn" or decision.status == REVIEW:
            return replace(decision, message=f"{decision.message} (warning: {reason})")
        data_alone = f"the data alone say {decision.status}: {decision.message}"
        return replace(decision, status=REVIEW, message=f"{decision.metric} · {decision.slice}: {reason}; {data_alone}")
    if validation.fit:
        return decision
    if policy == "warn" or decision.status == REVIEW:
        return replace(decision, message=f"{decision.message} (warning: {validation.reason})")
    data_alone = f"the data alone say {decision.status}: {decision.message}"
    return replace(decision, status=REVIEW, message=f"{decision.metric}: {validation.reason}; {data_alone}")


@dataclass(frozen=True)
class _Paired:
    """Both runs' scores on the questions both answered, aligned once for every decision that reads them."""

    base: pd.DataFrame  # the baseline's whole frame (its scored questions count as available)
    base_common: pd.DataFrame
    cand_common: pd.DataFrame
    slices: dict[str, np.ndarray]  # slice -> which common questions are in it
    base_slices: dict[str, np.ndarray]  # slice -> which of the baseline's questions are in it

    @classmethod
    def of(cls, base: pd.DataFrame, cand: pd.DataFrame, common: pd.Index) -> _Paired:
        base_common, cand_common = base.loc[common], cand.loc[common]
        return cls(base, base_common, cand_common, _slice_masks(base_common), _slice_masks(base))

    def changed(self, metric: str, *, kept: int = CHANGED_KEPT) -> dict[str, Any]:
        """How many questions changed on ``metric``, and the ``kept`` largest drops and rises (ties by question id)."""
        b = self.base_common[metric].to_numpy(dtype=float)
        c = self.cand_common[metric].to_numpy(dtype=float)
        with np.errstate(invalid="ignore"):
            delta = c - b
        moved = np.flatnonzero(np.isfinite(delta) & (delta != 0))
        qids = self.base_common.index.to_numpy()
        base_rows = self.base_common["row"].to_numpy()
        cand_rows = self.cand_common["row"].to_numpy()

        def largest(sign: float) -> list[dict[str, Any]]:
            side = moved[sign * delta[moved] > 0]
            if side.size > kept:  # the kept-th largest change, and every question tied with it
                cut = np.partition(sign * delta[side], side.size - kept)[side.size - kept]
                side = side[sign * delta[side] >= cut]
            order = sorted(side.tolist(), key=lambda i: (-sign * delta[i], qids[i]))[:kept]
            return [
                {
                    "question": str(qids[i]),
                    "base_row": int(base_rows[i]),
                    "candidate_row": int(cand_rows[i]),
                    "base": float(b[i]),
                    "candidate": float(c[i]),
                    "delta": float(delta[i]),
                }
                for i in order
            ]

        return {"count": int(moved.size), "kept": kept, "down": largest(-1.0), "up": largest(1.0)}


def _slice_masks(frame: pd.DataFrame) -> dict[str, np.ndarray]:
    """Which rows of a frame are in each slice ("all", or a question type as :func:`gate_frame` names it)."""
    labels = frame[SLICE_COLUMN].astype("string").fillna("(none)") if SLICE_COLUMN in frame.columns else None
    masks = {"all": np.ones(len(frame), dtype=bool)}
    if labels is not None:
        codes, names = pd.factorize(labels)
        masks.update({str(name): codes == i for i, name in enumerate(names)})
    return masks


def _to_settle(
    decision: GateDecision, data_status: str, paired: _Paired, confidence: float, family_size: int = 1
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
    b = paired.base_common[decision.metric].to_numpy(dtype=float)
    c = paired.cand_common[decision.metric].to_numpy(dtype=float)
    use = ~np.isnan(b) & ~np.isnan(c) & paired.slices.get(decision.slice, np.zeros(len(b), dtype=bool))
    base_scores = paired.base[decision.metric].to_numpy(dtype=float)
    in_slice = paired.base_slices.get(decision.slice, np.zeros(len(base_scores), dtype=bool))
    scored = int(np.count_nonzero(~np.isnan(base_scores) & in_slice))
    scope = "the eval set" if decision.slice == "all" else f"slice {decision.slice}"
    if use.sum() < 2:
        return {
            "sentence": f"too few paired questions to plan from ({int(use.sum())}); {scope} has {scored:,} scored on "
            f"{decision.metric}: score more of them in both runs",
            "questions": None,
        }
    plan = settle_review(
        b[use],
        c[use],
        margin=decision.margin,
        higher_is_better=decision.higher_is_better,
        confidence=confidence,
        power=SETTLE_POWER,
        available=scored,
        family_size=max(1, family_size) if decision.correction == "holm" else 1,
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


def _field(decision: Any, key: str) -> Any:
    return decision.get(key) if isinstance(decision, Mapping) else getattr(decision, key, None)


def headline_decision(decisions: Sequence[Any], overall: str) -> Any | None:
    """The decision that says most about the overall status (records or :func:`comparison_as_dict` dicts).

    Among those with the overall status: a drop the data alone blocked first (a review only because of
    the judge), then a drop the correction for the family left unproven, then the rest; overall
    before slices; in the order decided.
    """

    def rank(item: tuple[int, Any]) -> tuple[int, int, int]:
        position, d = item
        p_value, p_adjusted, confidence = (_field(d, k) for k in ("p_value", "p_adjusted", "confidence"))
        alpha = (1.0 - (confidence if confidence is not None else 0.95)) / 2.0
        corrected_away = p_value is not None and p_adjusted is not None and p_value <= alpha < p_adjusted
        kind = 0 if _field(d, "data_status") == BLOCK else 1 if corrected_away else 2
        return kind, 0 if _field(d, "slice") == "all" else 1, position

    matching = [(i, d) for i, d in enumerate(decisions) if _field(d, "status") == overall]
    return min(matching, key=rank)[1] if matching else None


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


def family_sentence(*, correction: str, family_size: int, confidence: float) -> str:
    """How a comparison's "block" was corrected for the number of its decisions, in words."""
    alpha = f"{(1 - confidence) / 2:g}"
    if not family_size:
        return "no family-wise correction (the comparison was made before the gate had one)"
    if correction == "holm":
        return (
            f"a block is corrected for {family_size} decisions (Holm's step-down, family-wise α = {alpha}); "
            f"a pass needs every decision to pass"
        )
    return f"no family-wise correction: each of the {family_size} decisions blocks at α = {alpha} alone"

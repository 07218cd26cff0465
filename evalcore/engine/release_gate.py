"""The non-inferiority release gate, per metric and per slice.

The rule is decided in advance. For each (metric, slice), with ``α = (1 - confidence) / 2``:

* **pass** if the interval's lower end is *above* minus the margin (the one-sided test of "a drop
  of at least the margin" rejects at level α; a bound exactly on ``-margin`` is not a pass);
* **block** if the test of "no drop" rejects at family-wise level α: the one-sided paired sign-flip
  test's p-value, adjusted by Holm's step-down over every (metric, slice) decision of the gate, is
  at most α. Uncorrected (``correction="none"``) that is the spec's "the whole interval is below 0";
* **review** otherwise (a person decides), with words that say whether the drop was merely not
  significant once corrected for the number of decisions.

The report passes only when every cell passes (an intersection-union test: its level is α with
no correction), and blocks when any cell blocks (Holm holds the chance that *any* harmless cell
blocks at α). Pass/fail metrics get Tango's score interval, the others the expanded percentile
bootstrap (see :mod:`._gate_cells`). The interval, the p-values and the family are logged with the
decision, so reviewers see uncertainty as well as direction.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, get_args

import numpy as np
import pandas as pd

from ._gate_cells import (
    ALL,
    Cell,
    Evidence,
    GateInterval,
    check_interval,
    gather_evidence,
    is_pass_fail,
    sign_flips_for,
)
from ._gate_frames import cells_of, metrics_of, paired_frames, slices_of
from ._validation import check_positive_int, check_probability, paired_arrays
from .bootstrap import BootstrapMethod
from .multiplicity import Correction, adjust, check_correction

GateStatus = Literal["pass", "review", "block"]
#: The gate's decisions, the one definition in the engine: ship it, let a person decide, do not ship.
STATUSES: tuple[str, ...] = get_args(GateStatus)
PASS, REVIEW, BLOCK = STATUSES
DEFAULT_MARGIN = 0.02
#: A (metric, slice) with fewer paired questions than this goes to review without an interval (gate and gate_frame).
MIN_PAIRS = 10


def _check_margin(margin: Any, metric: str) -> float:
    if (
        isinstance(margin, bool)
        or not isinstance(margin, (int, float, np.floating))
        or not math.isfinite(margin)
        or margin < 0
    ):
        raise ValueError(f"margin for {metric!r} must be a non-negative number (a tolerated drop), got {margin!r}")
    return float(margin)


@dataclass(frozen=True)
class GateDecision:
    """One gate decision: the interval on ``candidate - baseline``, the test of "no drop", and what they mean.

    Parameters
    ----------
    metric : str
        The metric's name.
    status : {"pass", "review", "block"}
        The decision (see :func:`decide`).
    mean : float
        The observed mean difference ``mean(cand - base)`` (the interval's estimate).
    low, high : float
        Bounds of the interval on it; NaN when there were too few pairs for one.
    margin : float
        The tolerated drop the decision used.
    n : int
        Paired questions.
    iterations, seed : int
        Of the bootstrap (``iterations`` is 0 when none was run: Tango's interval, or too few pairs).
    confidence : float
        Level of the two-sided interval; each one-sided test is at ``α = (1 - confidence) / 2``.
    message : str
        The decision in words, with the interval, as the spec writes it.
    slice : str, default "all"
        The slice of questions decided on.
    higher_is_better : bool, default True
        The metric's direction.
    base_mean, cand_mean : float, default NaN
        Each run's mean over the paired questions.
    p_value : float, default NaN
        One-sided p-value of the paired sign-flip test of "no drop" (NaN: not tested).
    p_adjusted : float, default NaN
        The same after the family-wise correction (Holm's step-down over ``family_size`` decisions).
    family_size : int, default 1
        Decisions of the gate that were tested together (every metric and slice with enough pairs).
    correction : {"holm", "none"}, default "holm"
        The family-wise correction applied.
    interval_method : str, default ""
        ``"tango"`` (pass/fail metrics), ``"expanded"`` or ``"percentile"`` (bootstrap); "" for none.
    test_method : str, default ""
        How the sign-flip p-value was computed: ``"exact"``, ``"monte-carlo"`` or ``"normal"``.

    Examples
    --------
    >>> decision = gate("rr", [0, 1] * 20, [1, 1] * 20, iterations=500)
    >>> decision.status, decision.mean, decision.as_dict()["n"], decision.interval_method
    ('pass', 0.5, 40, 'tango')
    """

    metric: str
    status: str
    mean: float
    low: float
    high: float
    margin: float
    n: int
    iterations: int
    seed: int
    confidence: float
    message: str
    slice: str = ALL
    higher_is_better: bool = True
    base_mean: float = math.nan
    cand_mean: float = math.nan
    p_value: float = math.nan
    p_adjusted: float = math.nan
    family_size: int = 1
    correction: str = "holm"
    interval_method: str = ""
    test_method: str = ""

    def as_dict(self) -> dict[str, Any]:
        """Return the fields as a plain dict (for JSON and DataFrames)."""
        return asdict(self)


def decide(
    low: float,
    high: float,
    *,
    margin: float,
    higher_is_better: bool = True,
    significant_drop: bool | None = None,
) -> str:
    """Return ``"pass"``, ``"block"`` or ``"review"`` for an interval on ``cand - base``.

    For a metric where lower is better the interval is mirrored first, so that "a drop" always
    means "worse".

    Parameters
    ----------
    low, high : float
        Bounds of the interval on the difference ``cand - base``.
    margin : float
        The largest drop you are willing to ship without discussion (non-negative).
    higher_is_better : bool, default True
        False for metrics where a rise is a regression.
    significant_drop : bool, optional
        Whether the test of "no drop" rejected (after the family's correction). By default the
        interval alone decides: a drop is significant when the whole interval is below 0.

    Returns
    -------
    str
        ``PASS`` if ``low > -margin``; else ``BLOCK`` if the drop is significant; else ``REVIEW``.

    References
    ----------
    The spec's release gate ("Turning metrics into a release gate"): non-inferiority with a margin.
    The spec writes ``lo >= -MARGIN``; a lower bound exactly on ``-margin`` does not reject "a drop
    of the margin", so it is not a pass here.

    Examples
    --------
    >>> decide(-0.077, -0.010, margin=0.02), decide(-0.01, 0.03, margin=0.02), decide(-0.05, 0.01, margin=0.02)
    ('block', 'pass', 'review')
    >>> decide(-0.02, 0.01, margin=0.02), decide(-0.077, -0.010, margin=0.02, significant_drop=False)
    ('review', 'review')
    """
    _check_margin(margin, "decide")
    if not higher_is_better:
        low, high = -high, -low
    if low > -margin:
        return PASS
    if high < 0 if significant_drop is None else significant_drop:
        return BLOCK
    return REVIEW


def _check_metric(metric: str, margin: float) -> float:
    if not isinstance(metric, str) or not metric:
        raise ValueError(f"metric must be a non-empty name, got {metric!r}")
    return _check_margin(margin, metric)


def _alpha(confidence: float) -> float:
    return (1.0 - check_probability(confidence, "confidence")) / 2.0


def _p(value: float) -> str:
    return f"{value:.2g}" if value >= 1e-4 else f"{value:.1e}"


def _message(cell: Cell, status: str, interval: Any, *, p_value: float, p_adjusted: float, family: int) -> str:
    """The decision in words, as the spec writes it, with what the test found when the interval alone would mislead."""
    mean, low, high = interval
    shown = f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]"
    worse_word = "drop" if cell.higher_is_better else "increase"
    where = "" if cell.slice == ALL else f" on slice {cell.slice}"
    if status == PASS:
        return f"{cell.metric}: {shown}"
    if status == BLOCK:  # the spec's words; the p-values are fields of the decision
        return f"{cell.metric}: real {worse_word} {shown}"
    worse = high < 0 if cell.higher_is_better else low > 0
    if worse and p_adjusted > p_value and family > 1:
        return (
            f"{cell.metric}: {worse_word}{where} {shown}, not significant after correcting for {family} decisions "
            f"(p = {_p(p_value)}, Holm-adjusted {_p(p_adjusted)})"
        )
    if worse:
        return f"{cell.metric}: {worse_word}{where} {shown}, not significant by the paired sign-flip test (p = {_p(p_value)})"
    return f"{cell.metric}: inconclusive {shown}"


def _too_few(cell: Cell, *, min_pairs: int, seed: int, confidence: float) -> GateDecision:
    """The decision for a cell with fewer than ``min_pairs`` paired questions: review, no interval, no test."""
    mean = float(np.mean(cell.diffs))
    return GateDecision(
        metric=cell.metric,
        status=REVIEW,
        mean=mean,
        low=math.nan,
        high=math.nan,
        margin=cell.margin,
        n=cell.n,
        iterations=0,
        seed=seed,
        confidence=confidence,
        message=f"{cell.metric}: too few paired questions ({cell.n} < {min_pairs}) for an interval; mean {mean:+.3f}",
        slice=cell.slice,
        higher_is_better=cell.higher_is_better,
        base_mean=float(cell.base.mean()),
        cand_mean=float(cell.cand.mean()),
        family_size=0,
    )


def _decide_family(
    cells: Sequence[Cell],
    *,
    min_pairs: int,
    correction: str,
    interval: str,
    iterations: int,
    seed: int,
    confidence: float,
    sign_flips: int | None,
    threads: int | None,
    resampler: str = "auto",
    replaced: Mapping[tuple[str, str], Evidence] | None = None,
) -> tuple[list[GateDecision], list[GateDecision]]:
    """Decide every cell of one gate: intervals and tests for those with enough pairs, one correction over them all.

    ``replaced`` gives, per (metric, slice), evidence made elsewhere (a judge-corrected difference) that
    decides the cell instead of its own; the correction runs over the family with it. Returns the
    decisions, and the replaced cells' decisions on their own evidence (the same family without replacement).
    """
    tested = [cell for cell in cells if cell.n >= min_pairs]
    alpha = _alpha(confidence)
    draws = sign_flips_for(len(tested), alpha=alpha, at_least=iterations) if sign_flips is None else sign_flips
    evidence = gather_evidence(
        tested,
        interval=interval,
        iterations=iterations,
        seed=seed,
        confidence=confidence,
        sign_flips=check_positive_int(draws, "sign_flips"),
        threads=threads,
        resampler=resampler,
    )
    own = list(evidence)
    evidence = [(replaced or {}).get((cell.metric, cell.slice), found) for cell, found in zip(tested, own)]

    def decide_all(found_list: list[Evidence]) -> dict[int, GateDecision]:
        adjusted = adjust([e.test.p_value for e in found_list], correction=correction)
        return {
            id(cell): _decided(
                cell, found, float(p_adj), family=len(tested), correction=correction, confidence=confidence, seed=seed
            )
            for cell, found, p_adj in zip(tested, found_list, adjusted)
        }

    decided = decide_all(evidence)
    raw = decide_all(own) if any(a is not b for a, b in zip(evidence, own)) else {}
    decisions = [
        decided[id(cell)]
        if id(cell) in decided
        else _too_few(cell, min_pairs=min_pairs, seed=seed, confidence=confidence)
        for cell in cells
    ]
    swapped = [raw[id(cell)] for cell, a, b in zip(tested, evidence, own) if a is not b]
    return decisions, swapped


def _decided(
    cell: Cell, evidence: Evidence, p_adjusted: float, *, family: int, correction: str, confidence: float, seed: int
) -> GateDecision:
    found = evidence.interval
    alpha = _alpha(confidence)
    status = decide(
        found.low,
        found.high,
        margin=cell.margin,
        higher_is_better=cell.higher_is_better,
        significant_drop=p_adjusted <= alpha,
    )
    p_value = evidence.test.p_value
    return GateDecision(
        metric=cell.metric,
        status=status,
        mean=found.estimate,
        low=found.low,
        high=found.high,
        margin=cell.margin,
        n=cell.n,
        iterations=evidence.iterations,
        seed=seed,
        confidence=confidence,
        message=_message(cell, status, found, p_value=p_value, p_adjusted=p_adjusted, family=family),
        slice=cell.slice,
        higher_is_better=cell.higher_is_better,
        base_mean=float(cell.base.mean()),
        cand_mean=float(cell.cand.mean()),
        p_value=p_value,
        p_adjusted=p_adjusted,
        family_size=family,
        correction=correction,
        interval_method=evidence.interval_method,
        test_method=evidence.test.method,
    )


def gate(
    metric: str,
    base: Sequence[float] | np.ndarray,
    cand: Sequence[float] | np.ndarray,
    *,
    margin: float = DEFAULT_MARGIN,
    iterations: int = 10_000,
    seed: int = 7,
    confidence: float = 0.95,
    higher_is_better: bool = True,
    slice: str = ALL,
    method: BootstrapMethod = "auto",
    threads: int | None = None,
    min_pairs: int = MIN_PAIRS,
    interval: GateInterval = "auto",
    sign_flips: int | None = None,
) -> GateDecision:
    """Run the non-inferiority gate on one metric (a family of one decision).

    Parameters
    ----------
    metric : str
        Name of the metric, used in the message.
    base, cand : sequences of float
        Paired per-question scores (same questions, same order, no NaN).
    margin : float, default 0.02
        The largest drop you are willing to ship without discussion.
    iterations, seed, confidence, method, threads
        Passed to :func:`paired_bootstrap` (``method`` is its resampler).
    higher_is_better : bool, default True
        False for metrics where a rise is a regression (latency, hallucination rate).
    slice : str, default "all"
        Name of the slice the scores come from, recorded on the decision.
    min_pairs : int, default 10
        Fewer paired questions go to review without an interval (the rule :func:`gate_frame` applies).
    interval : {"auto", "tango", "expanded", "percentile"}, default "auto"
        Tango's score interval for pass/fail scores and the expanded percentile bootstrap otherwise;
        ``"percentile"`` is the spec's own interval.
    sign_flips : int, optional
        As in :func:`gate_frame`.

    Returns
    -------
    GateDecision

    Examples
    --------
    >>> decision = gate("recall@5", [0, 1, 1, 1] * 50, [1, 1, 1, 1] * 50)
    >>> decision.status, decision.message
    ('pass', 'recall@5: +0.250 [+0.195, +0.314]')
    >>> gate("recall@5", [0, 1, 1, 1] * 50, [1, 1, 1, 1] * 50, interval="percentile").message
    'recall@5: +0.250 [+0.190, +0.315]'
    """
    margin = _check_metric(metric, margin)
    base_arr, cand_arr = paired_arrays(base, cand)
    cell = Cell(metric, slice, base_arr, cand_arr, margin, bool(higher_is_better), is_pass_fail(base_arr, cand_arr))
    (decision,), _ = _decide_family(
        [cell],
        min_pairs=check_positive_int(min_pairs, "min_pairs"),
        correction="holm",
        interval=check_interval(interval),
        iterations=check_positive_int(iterations, "iterations"),
        seed=seed,
        confidence=confidence,
        sign_flips=sign_flips,
        threads=threads,
        resampler=method,
    )
    return decision


def overall_status(statuses: Sequence[str]) -> str:
    """Return "block" if any decision blocks, else "review" if any needs review, else "pass".

    Parameters
    ----------
    statuses : sequence of str
        Statuses of the decisions, each one of ``STATUSES``.

    Returns
    -------
    str
        The worst status; ``"pass"`` for no statuses at all.

    Examples
    --------
    >>> overall_status(["pass", "review", "pass"])
    'review'
    """
    statuses = list(statuses)
    unknown = sorted({repr(s) for s in statuses if s not in STATUSES})
    if unknown:
        raise ValueError(f"unknown gate status(es) {', '.join(unknown)}; a status is one of {STATUSES}")
    if BLOCK in statuses:
        return BLOCK
    if REVIEW in statuses:
        return REVIEW
    return PASS


@dataclass(frozen=True)
class GateReport:
    """Every (metric, slice) decision of a comparison and the overall status.

    Parameters
    ----------
    decisions : tuple of GateDecision
        One per (metric, slice), in the order they were made.
    overall : {"pass", "review", "block"}
        The worst status among them (see :func:`overall_status`).
    n_paired : int
        Questions in both runs.
    notes : tuple of str, default ()
        What the comparison left out, in words.
    family_size : int, default 0
        Decisions tested together (those with enough pairs); Holm's correction runs over them.
    correction : {"holm", "none"}, default "holm"
        The family-wise correction of "block".
    replaced : tuple of GateDecision, default ()
        For cells decided on evidence given to :func:`gate_frame` (``evidence``), the decision
        their own evidence would have made, in the same family without the replacement.

    Examples
    --------
    >>> import pandas as pd
    >>> base = pd.DataFrame({"rr": [0.0, 1.0] * 10})
    >>> report = gate_frame(base, base.assign(rr=1.0), iterations=500)
    >>> report.overall, len(report.blocking()), list(report.to_frame()["metric"]), report.family_size
    ('pass', 0, ['rr'], 1)
    """

    decisions: tuple[GateDecision, ...]
    overall: str
    n_paired: int
    notes: tuple[str, ...] = field(default_factory=tuple)
    family_size: int = 0
    correction: str = "holm"
    replaced: tuple[GateDecision, ...] = field(default_factory=tuple)

    def to_frame(self) -> pd.DataFrame:
        """Return one row per decision, one column per field of :class:`GateDecision`."""
        return pd.DataFrame([d.as_dict() for d in self.decisions])

    def blocking(self) -> tuple[GateDecision, ...]:
        """Return the decisions that block."""
        return tuple(d for d in self.decisions if d.status == BLOCK)


def gate_frame(
    base: pd.DataFrame,
    cand: pd.DataFrame,
    *,
    metrics: Sequence[str] | None = None,
    slice_by: str | None = None,
    margin: float | Mapping[str, float] = DEFAULT_MARGIN,
    higher_is_better: Mapping[str, bool] | None = None,
    iterations: int = 10_000,
    seed: int = 7,
    confidence: float = 0.95,
    min_pairs: int = MIN_PAIRS,
    threads: int | None = None,
    correction: Correction = "holm",
    interval: GateInterval = "auto",
    sign_flips: int | None = None,
    evidence: Mapping[tuple[str, str], Evidence] | None = None,
) -> GateReport:
    """Run the gate for every metric, overall and for every slice, on per-question frames.

    Parameters
    ----------
    base, cand : pandas.DataFrame
        One row per question, indexed by question id, one column per metric (NaN where a
        question is not scored, such as retrieval metrics of unanswerable questions). Rows are
        paired on the index; only questions in both are used, and for each metric only the
        questions scored (not NaN) in both.
    metrics : sequence of str, optional
        Columns to gate; by default every numeric column in both frames, except ``slice_by`` and the
        bookkeeping columns of a scored frame (``k``, ``n_relevant``, ``answerable``, ``declined``).
    slice_by : str, optional
        Column holding each question's slice (its type); taken from ``base``, or from ``cand``
        for questions missing there. Decisions are made overall (slice ``"all"``) and per slice.
    margin : float or mapping metric -> float, default 0.02
        Margin per metric; metrics missing from a mapping get 0.02.
    higher_is_better : mapping metric -> bool, optional
        Direction per metric (default: higher is better).
    min_pairs : int, default 10
        A (metric, slice) with fewer paired questions is sent to review without an interval or a
        test (and is not counted in the family).
    iterations, seed, confidence, threads
        Passed to :func:`paired_bootstrap`; every decision uses the same seed.
    correction : {"holm", "none"}, default "holm"
        Family-wise correction of "block" over every (metric, slice) tested; ``"none"`` tests each at α alone.
    interval : {"auto", "tango", "expanded", "percentile"}, default "auto"
        As in :func:`gate`.
    sign_flips : int, optional
        Most random sign patterns a Monte Carlo sign-flip test may draw (default: enough that a
        corrected cell can block, ``10 × family / α`` and at least ``iterations``).
    evidence : mapping (metric, slice) -> Evidence, optional
        Evidence made elsewhere that decides a cell instead of its own interval and sign-flip test
        (the judge-corrected difference of :mod:`.ppi_runs`, interval method ``"ppi"``): same rule,
        its p-value in the family's correction. The cell's own decision is in ``replaced``.

    Returns
    -------
    GateReport

    Examples
    --------
    >>> import pandas as pd
    >>> base = pd.DataFrame({"kind": ["a", "b"] * 20, "recall@5": [1.0, 0.0] * 20})
    >>> cand = base.assign(**{"recall@5": [0.0, 0.0] * 20})
    >>> report = gate_frame(base, cand, slice_by="kind", iterations=500)
    >>> report.overall, [(d.slice, d.status) for d in report.decisions], report.family_size
    ('block', [('all', 'block'), ('a', 'block'), ('b', 'review')], 3)

    Slice "b" did not change, but 20 pass/fail questions cannot show that it did not drop by 2 points:

    >>> report.decisions[2].message
    'recall@5: inconclusive +0.000 [-0.161, +0.161]'
    """
    min_pairs = check_positive_int(min_pairs, "min_pairs")
    correction = check_correction(correction)
    b, c, notes = paired_frames(base, cand)
    metrics = metrics_of(b, c, metrics, slice_by)
    margins = {
        m: _check_metric(m, margin.get(m, DEFAULT_MARGIN) if isinstance(margin, Mapping) else margin) for m in metrics
    }
    directions = {m: bool((higher_is_better or {}).get(m, True)) for m in metrics}
    cells = cells_of(b, c, metrics, slices_of(b, c, slice_by), margins=margins, directions=directions)
    decisions, swapped = _decide_family(
        cells,
        min_pairs=min_pairs,
        correction=correction,
        interval=check_interval(interval),
        iterations=check_positive_int(iterations, "iterations"),
        seed=seed,
        confidence=confidence,
        sign_flips=sign_flips,
        threads=threads,
        replaced=evidence,
    )
    return GateReport(
        decisions=tuple(decisions),
        overall=overall_status([d.status for d in decisions]),
        n_paired=len(b),
        notes=tuple(notes),
        family_size=sum(1 for cell in cells if cell.n >= min_pairs),
        correction=correction,
        replaced=tuple(swapped),
    )

"""The non-inferiority release gate, per metric and per slice.

The rule is decided in advance: **pass** if the lower end of the interval on the difference is
at least minus the margin; **block** if the whole interval is below zero; otherwise **review**
(a person decides). The interval is logged with the decision, so reviewers see uncertainty as
well as direction.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, get_args

import numpy as np
import pandas as pd

from . import bootstrap as _bootstrap
from ._validation import check_positive_int
from .bootstrap import BootstrapMethod, BootstrapResult, paired_bootstrap

GateStatus = Literal["pass", "review", "block"]
#: The gate's decisions, the one definition in the engine: ship it, let a person decide, do not ship.
STATUSES: tuple[str, ...] = get_args(GateStatus)
PASS, REVIEW, BLOCK = STATUSES
DEFAULT_MARGIN = 0.02
#: Columns of a scored frame (see ``score_retrieval``) that describe a question rather than score it.
BOOKKEEPING_COLUMNS = frozenset({"k", "n_relevant", "answerable", "declined"})
ALL = "all"


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
    """One gate decision: the interval on ``candidate - baseline`` and what it means.

    Parameters
    ----------
    metric : str
        The metric's name.
    status : {"pass", "review", "block"}
        The decision (see :func:`decide`).
    mean : float
        The observed mean difference ``mean(cand - base)`` (the interval's estimate).
    low, high : float
        Bounds of the bootstrap interval on it; NaN when there were too few pairs for one.
    margin : float
        The tolerated drop the decision used.
    n : int
        Paired questions.
    iterations, seed : int
        Of the bootstrap (``iterations`` is 0 when none was run).
    confidence : float
        Level of the interval.
    message : str
        The decision in words, with the interval, as the spec writes it.
    slice : str, default "all"
        The slice of questions decided on.
    higher_is_better : bool, default True
        The metric's direction.
    base_mean, cand_mean : float, default NaN
        Each run's mean over the paired questions.

    Examples
    --------
    >>> decision = gate("rr", [0, 1] * 20, [1, 1] * 20, iterations=500)
    >>> decision.status, decision.mean, decision.as_dict()["n"]
    ('pass', 0.5, 40)
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

    def as_dict(self) -> dict[str, Any]:
        """Return the fields as a plain dict (for JSON and DataFrames)."""
        return asdict(self)


def decide(low: float, high: float, *, margin: float, higher_is_better: bool = True) -> str:
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

    Returns
    -------
    str
        ``PASS`` if ``low >= -margin``; else ``BLOCK`` if ``high < 0``; else ``REVIEW``.

    References
    ----------
    The spec's release gate ("Turning metrics into a release gate"): non-inferiority with a margin.

    Examples
    --------
    >>> decide(-0.077, -0.010, margin=0.02), decide(-0.01, 0.03, margin=0.02), decide(-0.05, 0.01, margin=0.02)
    ('block', 'pass', 'review')
    """
    _check_margin(margin, "decide")
    if not higher_is_better:
        low, high = -high, -low
    if low >= -margin:
        return PASS
    if high < 0:
        return BLOCK
    return REVIEW


def _message(metric: str, status: str, mean: float, low: float, high: float, higher_is_better: bool) -> str:
    interval = f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]"
    if status == PASS:
        return f"{metric}: {interval}"
    if status == BLOCK:
        worse = "real drop" if higher_is_better else "real increase"
        return f"{metric}: {worse} {interval}"
    return f"{metric}: inconclusive {interval}"


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
) -> GateDecision:
    """Run the non-inferiority gate on one metric.

    Parameters
    ----------
    metric : str
        Name of the metric, used in the message.
    base, cand : sequences of float
        Paired per-question scores (same questions, same order, no NaN).
    margin : float, default 0.02
        The largest drop you are willing to ship without discussion.
    iterations, seed, confidence, method, threads
        Passed to :func:`paired_bootstrap`.
    higher_is_better : bool, default True
        False for metrics where a rise is a regression (latency, hallucination rate).
    slice : str, default "all"
        Name of the slice the scores come from, recorded on the decision.

    Returns
    -------
    GateDecision

    Examples
    --------
    >>> decision = gate("recall@5", [0, 1, 1, 1] * 50, [1, 1, 1, 1] * 50)
    >>> decision.status, decision.message
    ('pass', 'recall@5: +0.250 [+0.190, +0.315]')
    """
    margin = _check_metric(metric, margin)
    result = paired_bootstrap(
        base, cand, iterations=iterations, seed=seed, confidence=confidence, method=method, threads=threads
    )
    return _decision(metric, result, base, cand, margin=margin, higher_is_better=higher_is_better, slice=slice)


def _check_metric(metric: str, margin: float) -> float:
    if not isinstance(metric, str) or not metric:
        raise ValueError(f"metric must be a non-empty name, got {metric!r}")
    return _check_margin(margin, metric)


def _decision(
    metric: str,
    result: BootstrapResult,
    base: Sequence[float] | np.ndarray,
    cand: Sequence[float] | np.ndarray,
    *,
    margin: float,
    higher_is_better: bool,
    slice: str,
) -> GateDecision:
    status = decide(result.low, result.high, margin=margin, higher_is_better=higher_is_better)
    return GateDecision(
        metric=metric,
        status=status,
        mean=result.estimate,
        low=result.low,
        high=result.high,
        margin=margin,
        n=result.n,
        iterations=result.iterations,
        seed=result.seed,
        confidence=result.confidence,
        message=_message(metric, status, result.estimate, result.low, result.high, higher_is_better),
        slice=slice,
        higher_is_better=higher_is_better,
        base_mean=float(np.mean(np.asarray(base, dtype=float))),
        cand_mean=float(np.mean(np.asarray(cand, dtype=float))),
    )


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

    Examples
    --------
    >>> import pandas as pd
    >>> base = pd.DataFrame({"rr": [0.0, 1.0] * 10})
    >>> report = gate_frame(base, base.assign(rr=1.0), iterations=500)
    >>> report.overall, len(report.blocking()), list(report.to_frame()["metric"])
    ('pass', 0, ['rr'])
    """

    decisions: tuple[GateDecision, ...]
    overall: str
    n_paired: int
    notes: tuple[str, ...] = field(default_factory=tuple)

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
    min_pairs: int = 10,
    threads: int | None = None,
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
        A (metric, slice) with fewer paired questions is sent to review without a bootstrap:
        its interval would mean little.
    iterations, seed, confidence, threads
        Passed to :func:`paired_bootstrap`; every decision uses the same seed.

    Returns
    -------
    GateReport

    Examples
    --------
    >>> import pandas as pd
    >>> base = pd.DataFrame({"kind": ["a", "b"] * 20, "recall@5": [1.0, 0.0] * 20})
    >>> cand = base.assign(**{"recall@5": [0.0, 0.0] * 20})
    >>> report = gate_frame(base, cand, slice_by="kind", iterations=500)
    >>> report.overall, [(d.slice, d.status) for d in report.decisions]
    ('block', [('all', 'block'), ('a', 'block'), ('b', 'pass')])
    """
    if not isinstance(base, pd.DataFrame) or not isinstance(cand, pd.DataFrame):
        raise TypeError("base and cand must be pandas DataFrames with one row per question")
    for frame, name in ((base, "base"), (cand, "cand")):
        if frame.index.has_duplicates:
            dup = frame.index[frame.index.duplicated()][0]
            raise ValueError(f"{name} has question {dup!r} more than once; one row per question")
    min_pairs = check_positive_int(min_pairs, "min_pairs")
    common = base.index.intersection(cand.index, sort=False)
    notes: list[str] = []
    if len(common) == 0:
        raise ValueError("base and cand share no question ids: a comparison must be paired")
    if len(common) < max(len(base), len(cand)):
        notes.append(
            f"paired on the {len(common)} questions both runs answered ({len(base)} base, {len(cand)} candidate)"
        )
    b = base.loc[common]
    c = cand.loc[common]
    if metrics is None:
        metrics = [
            col
            for col in b.columns
            if col != slice_by
            and col not in BOOKKEEPING_COLUMNS
            and col in c.columns
            and pd.api.types.is_numeric_dtype(b[col])
            and not pd.api.types.is_bool_dtype(b[col])
        ]
    else:
        missing = [m for m in metrics if m not in b.columns or m not in c.columns]
        if missing:
            raise ValueError(
                f"metric(s) {missing} are not columns of both frames; available: {sorted(set(b.columns) & set(c.columns))}"
            )
    if not metrics:
        raise ValueError("no metrics to gate: the frames share no numeric columns")
    margins = {
        m: _check_margin(margin.get(m, DEFAULT_MARGIN) if isinstance(margin, Mapping) else margin, m) for m in metrics
    }
    directions = {m: bool((higher_is_better or {}).get(m, True)) for m in metrics}

    slices: list[tuple[str, np.ndarray]] = [(ALL, np.ones(len(common), dtype=bool))]
    if slice_by is not None:
        if slice_by not in b.columns and slice_by not in c.columns:
            raise ValueError(f"slice_by column {slice_by!r} is in neither frame")
        labels = b[slice_by] if slice_by in b.columns else c[slice_by]
        if slice_by in c.columns:
            labels = labels.fillna(c[slice_by]) if slice_by in b.columns else labels
        labels = labels.astype("string").fillna("(none)")
        for value in sorted(labels.unique()):
            slices.append((str(value), (labels == value).to_numpy()))

    decisions: list[GateDecision | None] = []
    pending = []  # (position in decisions, metric, slice, base, cand): bootstrapped together below
    for metric in metrics:
        bv = pd.to_numeric(b[metric], errors="coerce").to_numpy(dtype=float)
        cv = pd.to_numeric(c[metric], errors="coerce").to_numpy(dtype=float)
        scored = np.isfinite(bv) & np.isfinite(cv)
        for name, mask in slices:
            use = scored & mask
            n = int(use.sum())
            if n == 0:
                continue
            if n < min_pairs:
                mean = float(np.mean(cv[use] - bv[use]))
                decisions.append(
                    GateDecision(
                        metric=metric,
                        status=REVIEW,
                        mean=mean,
                        low=math.nan,
                        high=math.nan,
                        margin=margins[metric],
                        n=n,
                        iterations=0,
                        seed=seed,
                        confidence=confidence,
                        message=f"{metric}: too few paired questions ({n} < {min_pairs}) for an interval; mean {mean:+.3f}",
                        slice=name,
                        higher_is_better=directions[metric],
                        base_mean=float(bv[use].mean()),
                        cand_mean=float(cv[use].mean()),
                    )
                )
                continue
            pending.append((len(decisions), metric, name, bv[use], cv[use]))
            decisions.append(None)
    # Every (metric, slice) bootstrap is split into independent jobs that share one pool of
    # threads, costliest first, and binned bootstraps of the same size draw their bins' counts
    # once for all metrics: the same numbers as calling gate() one by one, in less time.
    prepared = []
    for position, metric, name, base_values, cand_values in pending:
        margins[metric] = _check_metric(metric, margins[metric])
        diffs, plan, n_iterations, level = _bootstrap._prepare(
            base_values,
            cand_values,
            iterations=iterations,
            seed=seed,
            confidence=confidence,
            method="auto",
            threads=threads,
        )
        prepared.append((position, metric, name, base_values, cand_values, diffs, plan, n_iterations, level))
    _bootstrap._run_jobs(_bootstrap._jobs_of([entry[6] for entry in prepared]), threads)
    for position, metric, name, base_values, cand_values, diffs, plan, n_iterations, level in prepared:
        result = _bootstrap._finish(diffs, plan, iterations=n_iterations, seed=seed, confidence=level)
        decisions[position] = _decision(
            metric,
            result,
            base_values,
            cand_values,
            margin=margins[metric],
            higher_is_better=directions[metric],
            slice=name,
        )
    return GateReport(
        decisions=tuple(decisions),  # type: ignore[arg-type]
        overall=overall_status([d.status for d in decisions]),
        n_paired=len(common),
        notes=tuple(notes),
    )

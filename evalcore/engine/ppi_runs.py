"""The prediction-powered difference between two runs whose rows were labelled by two campaigns.

A gate compares a candidate run with a baseline on the same questions. People labelled a sample
of each run's rows (a campaign per run), each campaign stratified on its own run (slice x that
run's judge verdict): the two samples have different strata and need not share questions, so the
paired estimator of :func:`.ppi.prediction_powered_difference` (one stratification for both runs)
does not apply. Here each run's people's mean over the compared questions is estimated on its
own (:func:`.ppi.prediction_powered_mean`, design ``"run"``, within its campaign's strata), and
the difference of the two estimates is the estimate:

``D = PPI_candidate - PPI_base``, with
``Var(D) = V_base + V_candidate + S2_D / N``.

``V_base`` and ``V_candidate`` are each estimate's variance over its own campaign's draw (the two
campaigns are drawn independently, so given the rows the two estimates are independent);
``S2_D / N`` is the questions' own sampling error, counted once: ``S2_D`` is the people's variance
of the paired difference ``y_candidate - y_base`` over the questions, estimated as ``S2_base +
S2_candidate - 2 C`` with each run's people's variance weighted by its strata and ``C`` the
people's covariance across runs on questions labelled on both, each weighted by the inverse of
its chance of being labelled on both (0 when fewer than :data:`MIN_SHARED` are: conservative, as
people's labels of two answers to one question go together), and never below ``(S_base -
S_candidate)^2``, its least value at any covariance. This term is small beside the campaigns'
unless people labelled most of the rows. The interval is normal, with Student's t at the Welch-Satterthwaite degrees of
freedom of the two runs' variances; the test of "no drop" is the one-sided normal test of
``D / se`` (:func:`drop_p_value`), so the gate's Holm correction takes it with the others.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import numpy as np
from scipy.special import ndtr

from ._gate_cells import Evidence
from ._interval import Interval
from ._ppi import satterthwaite, t_quantile
from ._validation import check_probability
from .paired_tests import DropTest
from .ppi import PredictionPowered, prediction_powered_mean
from .proportions import z_score

#: Questions labelled on both runs needed before their covariance is used (else 0, conservatively).
MIN_SHARED = 10


def drop_p_value(estimate: float, standard_error: float, *, higher_is_better: bool = True) -> float:
    """Return the one-sided p-value of "no drop" for a normal estimate of ``candidate - base``.

    Parameters
    ----------
    estimate : float
        The estimated difference, candidate minus base.
    standard_error : float
        Its standard error (0: the sign of the estimate decides, p 0 or 1).
    higher_is_better : bool, default True
        False where a rise is the regression.

    Returns
    -------
    float
        The chance of an estimate at least this far towards "worse" if nothing changed.

    Examples
    --------
    >>> round(drop_p_value(-0.04, 0.02), 4), round(drop_p_value(-0.04, 0.02, higher_is_better=False), 4)
    (0.0228, 0.9772)
    """
    if not standard_error > 0:
        worse = estimate < 0 if higher_is_better else estimate > 0
        return 0.0 if worse else 1.0
    z = estimate / standard_error
    return float(ndtr(z) if higher_is_better else ndtr(-z))


def gate_evidence(difference: PredictionPowered, *, higher_is_better: bool, changed: int) -> Evidence:
    """Return the evidence a gate cell is decided on from a prediction-powered difference (interval ``"ppi"``).

    Parameters
    ----------
    difference : PredictionPowered
        From :func:`prediction_powered_run_difference` (or :func:`.ppi.prediction_powered_difference`).
    higher_is_better : bool
        The metric's direction.
    changed : int
        Recorded as the test's questions (the cell's compared questions).

    Returns
    -------
    Evidence
        Its interval, and the one-sided normal test of :func:`drop_p_value` (method ``"normal"``), for
        ``gate_frame(evidence={(metric, slice): ...})``.

    Examples
    --------
    >>> d = PredictionPowered(-0.05, -0.09, -0.01, standard_error=0.02, method="ppi++",
    ...     labels_only=Interval(-0.05, -0.1, 0.0), judge_raw=0.01, labels=400, effective_labels=600.0,
    ...     weights=(), strata=4, design="population", confidence=0.95)
    >>> e = gate_evidence(d, higher_is_better=True, changed=1000)
    >>> e.interval_method, e.test.method, round(e.test.p_value, 4)
    ('ppi', 'normal', 0.0062)
    """
    p_value = drop_p_value(difference.estimate, difference.standard_error, higher_is_better=higher_is_better)
    return Evidence(
        interval=Interval(difference.estimate, difference.low, difference.high),
        interval_method="ppi",
        iterations=0,
        test=DropTest(p_value=p_value, method="normal", changed=int(changed)),
    )


def _fits(labels, judge_labelled, judge_rows, labelled_strata, row_strata, tuning, guard):
    """One run's estimate over its rows (design "run"), its labels-only twin and its people's spread over the rows."""
    common = dict(
        labels=labels,
        judge_labelled=judge_labelled,
        judge_rows=judge_rows,
        labelled_strata=labelled_strata,
        row_strata=row_strata,
        guard=guard,
    )
    run = prediction_powered_mean(**common, design="run", tuning=tuning)
    population = prediction_powered_mean(**common, design="population", tuning=tuning)
    alone = prediction_powered_mean(**common, design="run", tuning="labels")
    spread = (population.standard_error**2 - run.standard_error**2) * len(judge_rows)
    return run, alone, max(spread, 0.0)


def _inclusion(labelled_strata: Sequence[Hashable], row_strata: Sequence[Hashable]) -> np.ndarray:
    """Each labelled row's inclusion probability in its campaign, ``n_h / N_h`` of its stratum."""
    labelled = [str(k) for k in labelled_strata]
    rows: dict[str, int] = {}
    for key in row_strata:
        rows[str(key)] = rows.get(str(key), 0) + 1
    counts: dict[str, int] = {}
    for key in labelled:
        counts[key] = counts.get(key, 0) + 1
    return np.array([counts[k] / rows[k] for k in labelled], dtype=np.float64)


def _shared_covariance(base, candidate) -> float:
    """People's covariance across the runs on questions labelled on both, each weighted by ``1 / (pi_base pi_cand)``.

    ``base`` and ``candidate`` are (questions, labels, inclusion probabilities) of each run's labelled
    rows; the two campaigns are drawn independently, so a question is labelled on both with the
    product of its probabilities. Fewer than :data:`MIN_SHARED` such questions: 0.
    """
    by_question = {q: (y, p) for q, y, p in zip(*base)}
    shared = [(by_question[q][0], y, by_question[q][1] * p) for q, y, p in zip(*candidate) if q in by_question]
    if len(shared) < MIN_SHARED:
        return 0.0
    a, b, pi = np.asarray(shared, dtype=np.float64).T
    w = 1.0 / pi
    mean_a, mean_b = np.sum(w * a) / w.sum(), np.sum(w * b) / w.sum()
    return float(np.sum(w * (a - mean_a) * (b - mean_b)) / w.sum() * len(shared) / (len(shared) - 1))


def prediction_powered_run_difference(
    *,
    base_labels: Sequence[float] | np.ndarray,
    base_judge_labelled: Sequence[float] | np.ndarray,
    base_judge_rows: Sequence[float] | np.ndarray,
    base_labelled_strata: Sequence[Hashable],
    base_row_strata: Sequence[Hashable],
    candidate_labels: Sequence[float] | np.ndarray,
    candidate_judge_labelled: Sequence[float] | np.ndarray,
    candidate_judge_rows: Sequence[float] | np.ndarray,
    candidate_labelled_strata: Sequence[Hashable],
    candidate_row_strata: Sequence[Hashable],
    base_questions: Sequence[Hashable] = (),
    candidate_questions: Sequence[Hashable] = (),
    tuning: str | float = "power",
    guard: bool = True,
    confidence: float = 0.95,
) -> tuple[PredictionPowered, PredictionPowered, PredictionPowered]:
    """Return the prediction-powered difference, candidate minus base, of people's means over the same questions.

    Parameters
    ----------
    base_labels, base_judge_labelled : array-like of float
        People's scores on the baseline's labelled rows and the judge's on the same rows.
    base_judge_rows : array-like of float
        The judge's score on every compared question's baseline row (the labelled ones included).
    base_labelled_strata, base_row_strata : sequence of hashable
        The stratum of each labelled row and of each row: the baseline campaign's sampling strata
        (within each, the labelled rows are a simple random sample of its rows). Stated, never defaulted.
    candidate_labels, candidate_judge_labelled, candidate_judge_rows, candidate_labelled_strata, candidate_row_strata
        The same for the candidate run and its campaign; both runs hold one row per compared question.
    base_questions, candidate_questions : sequence of hashable, optional
        The question of each labelled row: questions labelled on both runs give the people's
        covariance across runs (at least :data:`MIN_SHARED`; else it is taken as 0, conservatively).
    tuning, guard
        As in :func:`.ppi.prediction_powered_mean`, for each run on its own.
    confidence : float, default 0.95
        Level of the two-sided interval; its lower end is the one-sided bound at ``(1 - confidence) / 2``.

    Returns
    -------
    (PredictionPowered, PredictionPowered, PredictionPowered)
        The difference (design ``"population"``: what a gate decides), then the baseline's and the
        candidate's own estimates (design ``"run"``).

    Examples
    --------
    >>> rng = np.random.default_rng(3)
    >>> ya = (rng.random(2000) < 0.8).astype(float); yb = np.where(rng.random(2000) < 0.93, ya, 1 - ya)
    >>> judge = lambda y: np.where(y == 1, rng.random(2000) < 0.95, rng.random(2000) < 0.4).astype(float)
    >>> fa, fb = judge(ya), judge(yb)
    >>> la, lb = rng.choice(2000, 300, replace=False), rng.choice(2000, 300, replace=False)
    >>> d, base, cand = prediction_powered_run_difference(
    ...     base_labels=ya[la], base_judge_labelled=fa[la], base_judge_rows=fa,
    ...     base_labelled_strata=fa[la], base_row_strata=fa,
    ...     candidate_labels=yb[lb], candidate_judge_labelled=fb[lb], candidate_judge_rows=fb,
    ...     candidate_labelled_strata=fb[lb], candidate_row_strata=fb)
    >>> bool(d.low < yb.mean() - ya.mean() < d.high), d.labels
    (True, 600)
    """
    confidence = check_probability(confidence, "confidence")
    if len(base_judge_rows) != len(candidate_judge_rows):
        raise ValueError(
            f"both runs hold one row per compared question: {len(base_judge_rows)} baseline and "
            f"{len(candidate_judge_rows)} candidate rows"
        )
    base, base_alone, base_spread = _fits(
        base_labels, base_judge_labelled, base_judge_rows, base_labelled_strata, base_row_strata, tuning, guard
    )
    cand, cand_alone, cand_spread = _fits(
        candidate_labels,
        candidate_judge_labelled,
        candidate_judge_rows,
        candidate_labelled_strata,
        candidate_row_strata,
        tuning,
        guard,
    )
    rows = len(base_judge_rows)
    shared = 0.0
    if len(base_questions) and len(candidate_questions):
        shared = _shared_covariance(
            (base_questions, base_labels, _inclusion(base_labelled_strata, base_row_strata)),
            (candidate_questions, candidate_labels, _inclusion(candidate_labelled_strata, candidate_row_strata)),
        )
    # Var(y_b - y_a) is at least (sd_a - sd_b)^2 whatever the covariance: a noisy covariance cannot go below it
    floor = (math.sqrt(base_spread) - math.sqrt(cand_spread)) ** 2
    questions_term = max(base_spread + cand_spread - 2 * shared, floor) / rows
    labels = base.labels + cand.labels

    def combine(a: PredictionPowered, b: PredictionPowered) -> tuple[float, float, float]:
        variance = a.standard_error**2 + b.standard_error**2
        df = satterthwaite([a.standard_error**2, b.standard_error**2], [a.labels, b.labels])
        return b.estimate - a.estimate, variance + questions_term, t_quantile(z_score(confidence), df)

    estimate, variance, t = combine(base, cand)
    alone_estimate, alone_variance, alone_t = combine(base_alone, cand_alone)
    se, alone_se = math.sqrt(variance), math.sqrt(alone_variance)
    # random labels alone, split evenly between the runs: variance 2 (S2_base + S2_candidate) / L + S2_D / N
    within = variance - questions_term
    effective = 2 * (base_spread + cand_spread) / within if within > 0 else math.inf
    methods = {base.method, cand.method}
    notes = [f"baseline: {base.note}" if base.note else "", f"candidate: {cand.note}" if cand.note else ""]
    difference = PredictionPowered(
        estimate,
        estimate - t * se,
        estimate + t * se,
        standard_error=se,
        method="labels" if methods == {"labels"} else "ppi++" if "ppi++" in methods else "ppi",
        labels_only=Interval(alone_estimate, alone_estimate - alone_t * alone_se, alone_estimate + alone_t * alone_se),
        judge_raw=cand.judge_raw - base.judge_raw,
        labels=labels,
        effective_labels=effective,
        weights=(base.weights, cand.weights),
        strata=base.strata + cand.strata,
        design="population",
        confidence=confidence,
        note="; ".join(n for n in notes if n) or None,
    )
    return difference, base, cand

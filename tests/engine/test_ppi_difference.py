"""The prediction-powered paired difference against the formulas written out here, field by field.

Per stratum, with weights ``l_a, l_b`` and rectifiers ``r = y - l f`` on the labelled rows: the estimate
``l_b mean(f_b) + mean(r_b) - l_a mean(f_a) - mean(r_a)``; the variance ``(1/n_a - 1/N) var(r_a) +
(1/n_b - 1/N) var(r_b) - 2 cov(r_a, r_b) (m/(n_a n_b) - 1/N)`` over the ``m`` rows labelled on both runs.
Strata add up at their shares of the rows; the "population" design adds the people's spread over N once.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from evalcore.engine.ppi import prediction_powered_difference

Z95 = 1.959963984540054


def _stratum(ya, yb, fa, fb, lam_a, lam_b):
    has_a, has_b = ~np.isnan(ya), ~np.isnan(yb)
    both = has_a & has_b
    n_a, n_b, m, rows = has_a.sum(), has_b.sum(), both.sum(), ya.size
    ra, rb = ya - lam_a * fa, yb - lam_b * fb
    estimate = lam_b * fb.mean() + rb[has_b].mean() - lam_a * fa.mean() - ra[has_a].mean()
    overlap = np.cov(ra[both], rb[both])[0, 1] * (m / (n_a * n_b) - 1 / rows) if m >= 2 else 0.0
    variance = (1 / n_a - 1 / rows) * np.var(ra[has_a], ddof=1) + (1 / n_b - 1 / rows) * np.var(rb[has_b], ddof=1)
    spread = np.var(ya[has_a], ddof=1) + np.var(yb[has_b], ddof=1)
    spread -= 2 * np.cov(ya[both], yb[both])[0, 1] if m >= 2 else 0.0
    return estimate, variance - 2 * overlap, spread


def reference(ya, yb, fa, fb, strata, weights, design):
    """(estimate, variance, labels-only estimate, labels-only variance, effective labels) from the formulas."""
    names = sorted(set(strata))
    keys = np.asarray(strata)
    shares = np.array([np.mean(keys == s) for s in names])
    tuned = [
        _stratum(ya[keys == s], yb[keys == s], fa[keys == s], fb[keys == s], *weights[i]) for i, s in enumerate(names)
    ]
    alone = [_stratum(ya[keys == s], yb[keys == s], fa[keys == s], fb[keys == s], 0.0, 0.0) for s in names]
    est, var = shares @ [t[0] for t in tuned], shares**2 @ [t[1] for t in tuned]
    lab_est, lab_var = shares @ [a[0] for a in alone], shares**2 @ [a[1] for a in alone]
    if design == "population":
        spread = shares @ [a[2] for a in alone] + shares @ (np.array([a[0] for a in alone]) - lab_est) ** 2
        var, lab_var = var + spread / ya.size, lab_var + spread / ya.size
    has_a, has_b = ~np.isnan(ya), ~np.isnan(yb)
    both = has_a & has_b
    n_a, n_b, m = has_a.sum(), has_b.sum(), both.sum()
    s_a, s_b = np.var(ya[has_a], ddof=1), np.var(yb[has_b], ddof=1)
    s_ab = np.cov(ya[both], yb[both])[0, 1] if m >= 2 else 0.0  # no covariance from fewer than 2 shared rows
    srs = s_a / n_a + s_b / n_b - 2 * s_ab * m / (n_a * n_b)
    if design == "run":
        srs -= (s_a + s_b - 2 * s_ab) / ya.size
    labelled = int(n_a + n_b)
    return est, var, lab_est, lab_var, labelled * srs / var, labelled


def _runs(seed=44, rows=300):
    rng = np.random.default_rng(seed)
    truth_a, truth_b = rng.random(rows), rng.random(rows)
    fa, fb = truth_a + rng.normal(0, 0.3, rows), truth_b + rng.normal(0, 0.4, rows)
    ya = truth_a + rng.normal(0, 0.1, rows)
    yb = 0.4 * truth_a + truth_b + rng.normal(0, 0.1, rows)
    ya[rng.random(rows) < 0.55] = np.nan  # about 135 labelled on each run, about 60 on both
    yb[rng.random(rows) < 0.55] = np.nan
    strata = np.where(np.arange(rows) < 120, "hard", "easy")
    return ya, yb, fa, fb, strata


@pytest.mark.parametrize("design", ["run", "population"])
@pytest.mark.parametrize("tuning", ["none", "labels", 0.4, "power"])
@pytest.mark.parametrize("stratified", [False, True])
def test_the_difference_is_the_formulas_field_by_field(design, tuning, stratified):
    ya, yb, fa, fb, strata = _runs()
    keys = strata if stratified else np.array(["all"] * ya.size)
    result = prediction_powered_difference(
        base_judge=fa,
        candidate_judge=fb,
        base_labels=ya,
        candidate_labels=yb,
        design=design,
        strata=keys.tolist() if stratified else None,
        tuning=tuning,
        guard=False,
    )
    strata_count = 2 if stratified else 1
    fixed = {"none": (1.0, 1.0), "labels": (0.0, 0.0), 0.4: (0.4, 0.4)}
    weights = [fixed[tuning]] * strata_count if tuning in fixed else list(result.weights)
    assert result.weights == tuple(tuple(w) for w in weights)
    if tuning == "power":
        assert all(0 < w < 1 for pair in weights for w in pair)
    est, var, lab_est, lab_var, effective, labelled = reference(ya, yb, fa, fb, keys, weights, design)
    assert result.estimate == pytest.approx(est, rel=1e-12, abs=1e-15)
    assert result.standard_error == pytest.approx(math.sqrt(var), rel=1e-9)
    assert (result.low, result.high) == pytest.approx(
        (est - Z95 * math.sqrt(var), est + Z95 * math.sqrt(var)), rel=1e-9
    )
    assert tuple(result.labels_only) == pytest.approx(
        (lab_est, lab_est - Z95 * math.sqrt(lab_var), lab_est + Z95 * math.sqrt(lab_var)), rel=1e-9
    )
    assert result.effective_labels == pytest.approx(effective, rel=1e-9)
    assert (result.labels, result.strata, result.design, result.confidence) == (labelled, strata_count, design, 0.95)
    assert result.judge_raw == pytest.approx(fb.mean() - fa.mean(), rel=1e-12)
    method = {"none": "ppi", "labels": "labels"}.get(tuning, "ppi++")
    assert (result.method, result.note) == (method, None)


def test_a_judge_unrelated_to_people_gets_no_weight():
    ya, yb, fa, fb, _ = _runs()
    noise = np.random.default_rng(45).random(ya.size)  # a candidate judge that ignores the answers
    guarded = prediction_powered_difference(
        base_judge=fa, candidate_judge=noise, base_labels=ya, candidate_labels=yb, design="run"
    )
    ((lam_a, lam_b),) = guarded.weights
    assert lam_a > 0 and lam_b == 0.0
    est, var, *_ = reference(ya, yb, fa, noise, np.array(["all"] * ya.size), [(lam_a, 0.0)], "run")
    assert guarded.estimate == pytest.approx(est, rel=1e-12) and guarded.standard_error == pytest.approx(math.sqrt(var))
    useless = prediction_powered_difference(
        base_judge=np.random.default_rng(46).random(ya.size), candidate_judge=noise, base_labels=ya,
        candidate_labels=yb, design="run",
    )  # fmt: skip
    assert useless.weights == ((0.0, 0.0),) and useless.method == "labels"


def test_a_constant_candidate_judge_gets_no_weight_and_the_base_weight_minimises_alone():
    ya, yb, fa, fb, _ = _runs()
    flat = np.full(ya.size, 0.5)  # no spread: the two weights' system is singular
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the singular system is solved without dividing by its zero diagonal
        result = prediction_powered_difference(
            base_judge=fa, candidate_judge=flat, base_labels=ya, candidate_labels=yb, design="run", guard=False
        )
    ((lam_a, lam_b),) = result.weights
    assert lam_b == 0.0 and 0.05 < lam_a < 0.95
    keys = np.array(["all"] * ya.size)
    at = reference(ya, yb, fa, flat, keys, [(lam_a, 0.0)], "run")[1]
    for step in (-0.01, 0.01):
        assert reference(ya, yb, fa, flat, keys, [(lam_a + step, 0.0)], "run")[1] > at


def test_a_weight_past_one_is_clipped_to_one():
    ya, yb, fa, fb, _ = _runs()
    half_a, half_b = fa / 5, fb / 5  # people's scores move five times as far as these judges': weights past 1
    result = prediction_powered_difference(
        base_judge=half_a, candidate_judge=half_b, base_labels=ya, candidate_labels=yb, design="run", guard=False
    )
    assert result.weights == ((1.0, 1.0),)


def test_labels_may_be_given_as_lists_with_none_for_unlabelled_rows():
    ya, yb, fa, fb, _ = _runs()
    as_lists = prediction_powered_difference(
        base_judge=fa.tolist(), candidate_judge=fb.tolist(), design="run",
        base_labels=[None if math.isnan(v) else v for v in ya], candidate_labels=[None if math.isnan(v) else v for v in yb],
    )  # fmt: skip
    as_arrays = prediction_powered_difference(
        base_judge=fa, candidate_judge=fb, base_labels=ya, candidate_labels=yb, design="run"
    )
    assert as_lists == as_arrays


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"base_judge": [math.inf] + [0.5] * 9}, "base_judge must be finite numbers, got .*inf.* at position 0"),
        (
            {"candidate_judge": [0.5] * 9 + [math.nan]},
            "candidate_judge must be finite numbers, got .*nan.* at position 9",
        ),
        ({"confidence": 1.0}, "confidence must be strictly between 0 and 1, got 1.0"),
        ({"candidate_labels": [1.0] * 9}, "every array holds one value per question: got 10, 10, 10, 9"),
        ({"candidate_labels": [1.0] * 9 + [math.inf]}, "labels must be finite numbers or NaN (unlabelled)"),
        ({"strata": ["s"] * 3}, "strata must give one stratum per row: 3 strata for 10 rows"),
    ],
)
def test_bad_input_is_named_in_full(change, message):
    good = dict(
        base_judge=[0.5] * 10, candidate_judge=[0.5] * 10, base_labels=[1.0, 0.0] * 5, candidate_labels=[1.0] * 10
    )
    with pytest.raises(ValueError, match=f"^{message}$".replace("(", r"\(").replace(")", r"\)")):
        prediction_powered_difference(**{**good, **change}, design="run")


def test_a_stratum_with_too_few_labels_is_named_in_full_and_two_a_run_suffice():
    ya, yb, fa, fb, _ = _runs()
    yb_two = np.full(ya.size, np.nan)
    yb_two[[3, 7]] = yb[[3, 7]] if not np.isnan(yb[[3, 7]]).any() else (0.2, 0.9)
    two = prediction_powered_difference(base_judge=fa, candidate_judge=fb, base_labels=ya, candidate_labels=yb_two,
                                        design="run", guard=False)  # fmt: skip
    assert two.labels == int((~np.isnan(ya)).sum()) + 2
    yb_two[7] = np.nan
    with pytest.raises(ValueError) as error:
        prediction_powered_difference(base_judge=fa, candidate_judge=fb, base_labels=ya, candidate_labels=yb_two,
                                      design="run", strata=["x"] * ya.size)  # fmt: skip
    assert str(error.value) == (
        f"stratum 'x': {int((~np.isnan(ya)).sum())} base and 1 candidate rows labelled; each run needs at least 2 "
        "in every stratum (label the same questions on both runs where you can)"
    )


def test_the_guard_s_note_names_what_it_did():
    ya, yb, fa, fb, _ = _runs()
    noise = np.random.default_rng(3).random(ya.size)  # weakly correlated with people by chance: a weight above 0
    guarded = prediction_powered_difference(base_judge=fa, candidate_judge=noise, base_labels=ya, candidate_labels=yb,
                                            design="run")  # fmt: skip
    assert guarded.note == (
        "in some strata the judge's correlation with people is too weak to trust: there the labels stand alone"
    )
    assert guarded.weights[0][1] == 0.0 and guarded.method == "ppi++"
    unguarded = prediction_powered_difference(base_judge=fa, candidate_judge=noise, base_labels=ya,
                                              candidate_labels=yb, design="run", guard=False)  # fmt: skip
    assert unguarded.weights[0][1] > 0 and unguarded.note is None


def _minimiser(ya, yb, fa, fb):
    """The weights solving the 2x2 system of the documented variance (one stratum), clipped to [0, 1]."""
    has_a, has_b = ~np.isnan(ya), ~np.isnan(yb)
    both = has_a & has_b
    n_a, n_b, m, rows = has_a.sum(), has_b.sum(), both.sum(), ya.size
    c_a, c_b, c_ab = 1 / n_a - 1 / rows, 1 / n_b - 1 / rows, m / (n_a * n_b) - 1 / rows

    def cov(x, y, mask):  # the rows labelled on both runs give no covariance when fewer than 2
        return np.cov(x[mask], y[mask])[0, 1] if mask.sum() >= 2 else 0.0

    hessian = [
        [c_a * cov(fa, fa, has_a), -c_ab * cov(fa, fb, both)],
        [-c_ab * cov(fa, fb, both), c_b * cov(fb, fb, has_b)],
    ]
    gradient = [
        c_a * cov(ya, fa, has_a) - c_ab * cov(fa, yb, both),
        c_b * cov(yb, fb, has_b) - c_ab * cov(ya, fb, both),
    ]
    return tuple(np.clip(np.linalg.solve(hessian, gradient), 0, 1))


@pytest.mark.parametrize("design", ["run", "population"])
@pytest.mark.parametrize("shared", [0, 1, 2, 30])
def test_the_rows_labelled_on_both_runs_enter_only_from_two_on(design, shared):
    """Base labelled on rows 0-59, candidate on 60 - shared to 119 - shared: 0, 1, 2 or 30 rows labelled on both."""
    rng = np.random.default_rng(7)
    truth_a, truth_b = rng.random(200), rng.random(200)
    fa, fb = truth_a + rng.normal(0, 0.3, 200), truth_b + rng.normal(0, 0.4, 200)
    rows = np.arange(200)
    ya = np.where(rows < 60, truth_a + rng.normal(0, 0.1, 200), np.nan)
    yb = np.where(
        (rows >= 60 - shared) & (rows < 120 - shared), 0.4 * truth_a + truth_b + rng.normal(0, 0.1, 200), np.nan
    )
    assert int((~np.isnan(ya) & ~np.isnan(yb)).sum()) == shared
    result = prediction_powered_difference(base_judge=fa, candidate_judge=fb, base_labels=ya, candidate_labels=yb,
                                           design=design, guard=False)  # fmt: skip
    ((lam_a, lam_b),) = result.weights
    assert (lam_a, lam_b) == pytest.approx(_minimiser(ya, yb, fa, fb), abs=1e-12)
    assert 0 < lam_a < 1 and 0 < lam_b < 1
    est, var, lab_est, lab_var, effective, labelled = reference(ya, yb, fa, fb, ["all"] * 200, [(lam_a, lam_b)], design)
    assert (result.estimate, result.standard_error) == pytest.approx((est, math.sqrt(var)), rel=1e-12)
    assert (result.labels_only.estimate, result.labels_only.high) == pytest.approx(
        (lab_est, lab_est + Z95 * math.sqrt(lab_var)), rel=1e-12
    )
    assert (result.effective_labels, result.labels) == (pytest.approx(effective, rel=1e-12), labelled)


def _uninformative(seed: int):
    """Small runs whose judges, jointly tuned, widen the interval (found by a seeded search)."""
    rng = np.random.default_rng(seed)
    rows = int(rng.integers(10, 40))
    common = rng.normal(size=rows)
    ya = rng.normal(size=rows) + rng.uniform(-2, 2) * common
    yb = rng.normal(size=rows) + rng.uniform(-2, 2) * common
    fa = (
        rng.uniform(-1, 1) * ya + rng.normal(size=rows) * rng.uniform(0, 1) + rng.uniform(-3, 3) * common
    ) * rng.uniform(0.1, 1)
    fb = (
        rng.uniform(-1, 1) * yb + rng.normal(size=rows) * rng.uniform(0, 1) + rng.uniform(-3, 3) * common
    ) * rng.uniform(0.1, 1)
    p = rng.uniform(0.3, 0.9)
    lab_a = rng.random(rows) < p
    lab_b = lab_a if rng.random() < 0.5 else rng.random(rows) < p
    return dict(base_judge=fa, candidate_judge=fb, base_labels=np.where(lab_a, ya, np.nan),
                candidate_labels=np.where(lab_b, yb, np.nan), design="run")  # fmt: skip


def test_when_the_tuned_interval_is_no_narrower_the_labels_stand_alone_exactly():
    runs = _uninformative(14)
    unguarded = prediction_powered_difference(**runs, guard=False)
    assert (
        any(unguarded.weights[0])
        and unguarded.high - unguarded.estimate >= unguarded.labels_only.high - unguarded.labels_only.estimate
    )
    result = prediction_powered_difference(**runs)
    alone = prediction_powered_difference(**runs, tuning="labels")
    assert (result.method, result.weights) == ("labels", ((0.0, 0.0),))
    assert result.note == "the judge did not narrow the interval: the labels stand alone"
    assert tuple(result) == tuple(alone) and result.labels_only == alone.labels_only
    assert (result.standard_error, result.effective_labels) == (alone.standard_error, alone.effective_labels)
    assert unguarded.note is None and alone.note is None


def test_a_judge_that_runs_against_people_gets_weight_0_without_a_guard_note():
    ya, yb, fa, fb, _ = _runs()
    against = -fb  # the candidate judge scores high where people score low: its weight clips to 0
    result = prediction_powered_difference(base_judge=fa, candidate_judge=against, base_labels=ya,
                                           candidate_labels=yb, design="run")  # fmt: skip
    ((lam_a, lam_b),) = result.weights
    assert lam_a > 0 and lam_b == 0.0 and result.method == "ppi++"
    assert result.note is None  # no weight above 0 was set aside: the guard did nothing


def test_two_base_labels_a_stratum_suffice():
    ya, yb, fa, fb, _ = _runs()
    ya_two = np.full(ya.size, np.nan)
    ya_two[[1, 2]] = (0.3, 0.8)
    two = prediction_powered_difference(base_judge=fa, candidate_judge=fb, base_labels=ya_two, candidate_labels=yb,
                                        design="run", guard=False)  # fmt: skip
    assert two.labels == 2 + int((~np.isnan(yb)).sum())


def test_no_questions_at_all_are_refused():
    with pytest.raises(ValueError) as error:
        prediction_powered_difference(base_judge=[], candidate_judge=[], base_labels=[], candidate_labels=[],
                                      design="run", strata=[])  # fmt: skip
    assert str(error.value) == "every array is empty: there are no questions to compare"


def test_a_judge_constant_on_its_labelled_rows_gets_weight_exactly_0():
    """The candidate judge gives 0.1 on all 4 of its labelled rows: no information, so weight 0 exactly (its mean
    over the 3 rows shared with the base run rounds off 0.1, so a covariance of 1e-35 must not become a weight)."""
    nan = math.nan
    ya = [nan, 0.34, 0.15, 0.45, 0.8, 0.23, 0.05, 0.4, nan, nan]
    yb = [0.2, 0.09, 0.58, 0.3] + [nan] * 6
    fa = [-0.407, -0.296, -0.055, -0.4, -0.757, -0.168, 0.05, -0.305, -0.454, -0.424]  # against people: weight 0
    fb = [0.1] * 4 + [0.67, 0.2, 0.94, 0.37, 0.11, 0.63]
    result = prediction_powered_difference(base_judge=fa, candidate_judge=fb, base_labels=ya, candidate_labels=yb,
                                           design="run", guard=False)  # fmt: skip
    assert (result.weights, result.method) == (((0.0, 0.0),), "labels")


def _clipped(seed: int) -> dict:
    """A stratum of ``rows`` questions, ``n`` labelled on each run, ``m`` of them on both: the shared rows agree
    closely and the others sit at their mean, so the estimated variance of the difference is negative (its
    overlap covariance outweighs the runs' own variances) and is clipped at 0, tuned or not."""
    rng = np.random.default_rng(seed)
    rows, n = int(rng.integers(10, 40)), int(rng.integers(4, 9))
    m = int(rng.integers(2, n))
    order = rng.permutation(rows)
    both, only_a, only_b = order[:m], order[m:n], order[n : 2 * n - m]
    ya, yb = np.full(rows, np.nan), np.full(rows, np.nan)
    truth = rng.normal(size=rows)
    ya[both], yb[both] = truth[both], truth[both] + rng.normal(size=m) * 0.05
    ya[only_a] = truth[both].mean() + rng.normal(size=n - m) * 0.01
    yb[only_b] = truth[both].mean() + rng.normal(size=n - m) * 0.01
    fa, fb = truth + rng.normal(size=rows) * 0.3, truth + rng.normal(size=rows) * 0.3
    return dict(base_judge=fa, candidate_judge=fb, base_labels=ya, candidate_labels=yb, design="run")


def test_a_tuned_variance_no_smaller_than_the_labels_own_even_both_zero_lets_the_labels_stand_alone():
    runs = _clipped(161)
    unguarded = prediction_powered_difference(**runs, guard=False)
    assert (
        all(unguarded.weights[0])
        and unguarded.standard_error == 0.0 == unguarded.labels_only.high - unguarded.labels_only.low
    )
    result = prediction_powered_difference(**runs)
    alone = prediction_powered_difference(**runs, tuning="labels")
    assert (result.method, result.weights, result.standard_error) == ("labels", ((0.0, 0.0),), 0.0)
    assert result.note == "the judge did not narrow the interval: the labels stand alone"
    assert tuple(result) == tuple(alone) and result.estimate != unguarded.estimate

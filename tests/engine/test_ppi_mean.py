"""The prediction-powered mean against ppi-python to 1e-9 and against its formulas written out, field by field.

``test_ppi.py`` checks the estimator against ppi-python to 1e-6 and by coverage; here every field of
the result is pinned on shared inputs, for each design, tuning and small-sample choice, with one
stratum and with several: what the weights, the strata's shares, the run's sampling error, the guard's
fallback and the Student quantile each add is then seen on its own.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from ppi_py.ppi import _calc_lam_glm
from scipy import stats

from evalcore.engine.ppi import PredictionPowered, prediction_powered_mean

Z95 = 1.959963984540054


def graded(seed: int, size: int):
    rng = np.random.default_rng(seed)
    y = rng.beta(4, 1.5, size)
    return y, np.clip(0.15 + 0.8 * y + rng.normal(0, 0.12, size), 0, 1)


def pass_fail(seed: int, size: int):
    rng = np.random.default_rng(seed)
    y = (rng.random(size) < 0.75).astype(float)
    return y, np.where(y == 1, rng.random(size) < 0.95, rng.random(size) < 0.44).astype(float)


def first(value) -> float:
    return float(np.ravel(value)[0])


# ---- ppi-python on shared inputs, to 1e-9 -----------------------------------------------------


@pytest.mark.parametrize("kind", [graded, pass_fail])
@pytest.mark.parametrize("lam", [None, 0.0, 0.3, 1.0])
@pytest.mark.parametrize("confidence", [0.9, 0.95])
def test_the_independent_design_is_ppi_mean_ci_to_1e9(kind, lam, confidence):
    y, f = kind(21, 1000)
    lab, unl = slice(0, 180), slice(180, None)
    tuning = "power" if lam is None else lam
    ours = prediction_powered_mean(labels=y[lab], judge_labelled=f[lab], judge_rows=f[unl], design="independent",
                                   tuning=tuning, guard=False, small_sample=False, confidence=confidence)  # fmt: skip
    low, high = ppi_mean_ci(y[lab], f[lab], f[unl], alpha=1 - confidence, lam=lam)
    point = first(ppi_mean_pointestimate(y[lab], f[lab], f[unl], lam=lam))
    assert ours.estimate == pytest.approx(point, abs=1e-9)
    assert (ours.low, ours.high) == pytest.approx((first(low), first(high)), abs=1e-9)
    reference_lam = float(_calc_lam_glm(y[lab], f[lab], f[unl], np.eye(1), clip=True)) if lam is None else lam
    assert ours.weights == pytest.approx((reference_lam,), abs=1e-12)
    # the labels alone are ppi-python's interval at lam = 0
    low0, high0 = ppi_mean_ci(y[lab], f[lab], f[unl], alpha=1 - confidence, lam=0.0)
    assert (ours.labels_only.low, ours.labels_only.high) == pytest.approx((first(low0), first(high0)), abs=1e-9)
    assert ours.judge_raw == pytest.approx(f[unl].mean(), abs=1e-12)


# ---- the formulas written out ------------------------------------------------------------------


def jeffreys(r: np.ndarray, y: np.ndarray, centre: float, ddof: int, smooth: bool) -> float:
    if not smooth or not np.all((y == 0) | (y == 1)):
        return float(np.var(r, ddof=ddof))
    values = np.concatenate([r, [1 - centre, -centre]])
    w = np.concatenate([np.ones(r.size), [0.5, 0.5]])
    mean = np.sum(w * values) / w.sum()
    return float(np.sum(w * (values - mean) ** 2) / (w.sum() - ddof))


def tuned(y, f, f_rows, design) -> float:
    if design == "independent":
        return float(_calc_lam_glm(y, f, f_rows, np.eye(1), clip=True))
    return float(np.clip(np.polyfit(f, y, 1)[0], 0, 1))


def reference(y, f, rows, lab_strata, row_strata, *, design, tuning, small_sample, confidence=0.95):
    """Every number of the result by the formulas of ``evalcore.engine._ppi`` and ``ppi``, without the guard."""
    names = sorted(set(row_strata))
    ddof = 0 if design == "independent" else 1
    parts = []
    for name in names:
        yh, fh, rh = y[lab_strata == name], f[lab_strata == name], rows[row_strata == name]
        lam = tuned(yh, fh, rh, design) if tuning == "power" else {"none": 1.0, "labels": 0.0}.get(tuning, tuning)
        n, big_n = yh.size, rh.size
        fit = []
        for weight in (lam, 0.0):
            r = yh - weight * fh
            s = jeffreys(r, yh, weight * fh.mean(), ddof, small_sample)
            if design == "independent":
                var = np.var(weight * rh) / big_n + s / n
            else:
                var = max(0.0, 1 - n / big_n) * s / n
            fit.append((weight * rh.mean() + r.mean(), var))
        parts.append((big_n / rows.size, lam, n, fit, float(np.var(yh, ddof=ddof)), rh.mean()))
    w = np.array([p[0] for p in parts])
    est, lab_est = (float(w @ [p[3][k][0] for p in parts]) for k in (0, 1))
    var, lab_var = (float(w**2 @ [p[3][k][1] for p in parts]) for k in (0, 1))
    means = np.array([p[3][1][0] for p in parts])
    spread = float(w @ (np.array([p[4] for p in parts]) + (means - w @ means) ** 2))
    if design == "population":
        var, lab_var = var + spread / rows.size, lab_var + spread / rows.size
    if design == "independent" and len(parts) > 1:
        tuned_means = np.array([p[3][0][0] for p in parts])
        between = float(w @ (tuned_means - w @ tuned_means) ** 2) / rows.size
        var, lab_var = var + between, lab_var + between
    z = float(stats.norm.ppf(1 - (1 - confidence) / 2))
    if small_sample:
        v = [wh**2 * (p[3][0][1] if any(q[1] for q in parts) else p[3][1][1]) for wh, p in zip(w, parts)]
        df = sum(v) ** 2 / sum(vh**2 / (p[2] - 1) for vh, p in zip(v, parts))
        z = float(stats.t.ppf(stats.norm.cdf(z), max(df, 3.0)))
    srs = spread / y.size * (max(0.0, 1 - y.size / rows.size) if design == "run" else 1.0)
    return dict(estimate=est, variance=var, labels_estimate=lab_est, labels_variance=lab_var, z=z,
                weights=tuple(p[1] for p in parts), effective=y.size * srs / var,
                judge_raw=float(w @ [p[5] for p in parts]))  # fmt: skip


def campaign(kind, design, stratified, seed=31):
    """A run of 600 rows, 160 of them labelled (80 a stratum, the rarer stratum oversampled), and its strata."""
    y_all, f_all = kind(seed, 600)
    rng = np.random.default_rng(seed)
    strata = np.where(f_all >= 0.75, "high", "low") if stratified else np.array(["all"] * 600)
    if stratified:
        lab = np.concatenate([rng.choice(np.flatnonzero(strata == s), 80, replace=False) for s in ("high", "low")])
    else:
        lab = rng.choice(600, 160, replace=False)
    if design == "independent":  # scored rows apart from the labelled ones
        keep = np.setdiff1d(np.arange(600), lab)
        return y_all[lab], f_all[lab], f_all[keep], strata[lab], strata[keep]
    return y_all[lab], f_all[lab], f_all, strata[lab], strata


# a pass/fail judge is constant within a verdict stratum: no weight to tune there, so that case is left out
FIELD_CASES = [
    pytest.param(
        design, tuning, stratified, small_sample, kind,
        id=f"{design}-{tuning}-{'two strata' if stratified else 'one stratum'}-{small_sample}-{kind.__name__}",
    )
    for kind, small_sample, stratified, tuning, design in itertools.product(
        [graded, pass_fail], [False, True], [False, True], ["power", "none", "labels", 0.35],
        ["run", "population", "independent"],
    )
    if not (kind is pass_fail and stratified and tuning == "power")
]  # fmt: skip


@pytest.mark.parametrize("design,tuning,stratified,small_sample,kind", FIELD_CASES)
def test_every_field_is_the_formulas(design, tuning, stratified, small_sample, kind):
    y, f, rows, lab_strata, row_strata = campaign(kind, design, stratified)
    result = prediction_powered_mean(labels=y, judge_labelled=f, judge_rows=rows, design=design,
                                     labelled_strata=lab_strata.tolist() if stratified else None,
                                     row_strata=row_strata.tolist() if stratified else None,
                                     tuning=tuning, guard=False, small_sample=small_sample)  # fmt: skip
    ref = reference(y, f, rows, lab_strata, row_strata, design=design, tuning=tuning, small_sample=small_sample)
    se, lab_se = math.sqrt(ref["variance"]), math.sqrt(ref["labels_variance"])
    assert result.weights == pytest.approx(ref["weights"], abs=1e-12)
    assert result.estimate == pytest.approx(ref["estimate"], abs=1e-12)
    assert result.standard_error == pytest.approx(se, abs=1e-12)
    assert (result.low, result.high) == pytest.approx(
        (ref["estimate"] - ref["z"] * se, ref["estimate"] + ref["z"] * se), abs=1e-9
    )
    assert tuple(result.labels_only) == pytest.approx(
        (
            ref["labels_estimate"],
            ref["labels_estimate"] - ref["z"] * lab_se,
            ref["labels_estimate"] + ref["z"] * lab_se,
        ),
        abs=1e-9,
    )
    assert result.effective_labels == pytest.approx(ref["effective"], rel=1e-9)
    assert result.judge_raw == pytest.approx(ref["judge_raw"], abs=1e-12)
    method = {"none": "ppi", "labels": "labels"}.get(tuning, "ppi++")
    assert (result.method, result.note, result.labels, result.strata) == (method, None, y.size, 1 + stratified)
    assert (result.design, result.confidence) == (design, 0.95)


@pytest.mark.parametrize("design", ["run", "population"])
def test_every_row_labelled_in_a_run_leaves_only_what_the_design_adds(design):
    y, f = graded(2, 40)
    result = prediction_powered_mean(labels=y, judge_labelled=f, judge_rows=f, design=design, small_sample=False)
    assert result.estimate == pytest.approx(y.mean(), abs=1e-14)
    assert np.corrcoef(y, f)[0, 1] > 0.7 > 1 / math.sqrt(38)  # the guard trusts the judge: a tuned weight above 0
    unguarded = prediction_powered_mean(labels=y, judge_labelled=f, judge_rows=f, design=design, guard=False,
                                        small_sample=False)  # fmt: skip
    assert unguarded.weights[0] > 0 and unguarded.method == "ppi++"
    # but the tuned interval is no narrower than the labels' (both are 0 wide, or equal): the labels stand alone
    assert (result.method, result.weights) == ("labels", (0.0,))
    assert result.note == "the judge did not narrow the interval: the labels stand alone"
    if design == "run":  # the run's own mean is known: no uncertainty
        assert (result.standard_error, result.low, result.high) == (0.0, result.estimate, result.estimate)
        assert result.effective_labels == 40.0
    else:
        assert result.standard_error == pytest.approx(math.sqrt(np.var(y, ddof=1) / 40), abs=1e-14)
        assert result.effective_labels == pytest.approx(40.0, rel=1e-12)


def test_the_worth_in_words():
    r = prediction_powered_mean(labels=[1.0, 0.0, 1.0, 1.0], judge_labelled=[1.0, 0.0, 1.0, 1.0],
                                judge_rows=[1.0, 0.0, 1.0, 1.0, 1.0, 0.0] * 300, design="population",
                                guard=False)  # fmt: skip
    assert r.worth == pytest.approx(r.effective_labels / 4, rel=1e-15)
    assert r.in_words() == (
        f"the judge was worth {r.worth:.1f}× the labels: 4 labels did the work of {r.effective_labels:,.0f} random "
        "labels alone"
    )
    fields = dict(standard_error=0.1, method="labels", labels_only=r.labels_only, judge_raw=0.5, weights=(0.0,))
    none = PredictionPowered(0.5, 0.3, 0.7, **fields, labels=0, effective_labels=0.0, strata=1, design="run",
                             confidence=0.95)  # fmt: skip
    assert math.isnan(none.worth)
    many = PredictionPowered(0.5, 0.3, 0.7, **fields, labels=1234, effective_labels=5678.4, strata=1, design="run",
                             confidence=0.95)  # fmt: skip
    assert many.in_words() == (
        "the judge was worth 4.6× the labels: 1,234 labels did the work of 5,678 random labels alone"
    )


GOOD = dict(labels=[1.0, 0.0] * 5, judge_labelled=[1.0, 0.0] * 5, judge_rows=[1.0, 0.0] * 5 + [1.0] * 5, design="run")
A10, A15 = ["a"] * 10, ["a"] * 15


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"design": "random"},
            "design must be one of ('run', 'population', 'independent') (say what the labelled rows are), got 'random'",
        ),  # fmt: skip
        ({"tuning": "best"}, "tuning must be one of ('power', 'none', 'labels') or a weight in [0, 1], got 'best'"),
        ({"tuning": 1.5}, "tuning must be between 0 and 1, got 1.5"),
        ({"confidence": 1.2}, "confidence must be strictly between 0 and 1, got 1.2"),
        ({"labels": [1.0, math.nan] + [0.0] * 8}, "labels must be finite numbers, got nan at position 1"),
        (
            {"labels": [1.0, None] + [0.0] * 8},
            "labels must be finite numbers, got nan at position 1",
        ),  # a missing score
        ({"judge_rows": [0.5] * 14 + [None]}, "judge_rows must be finite numbers, got nan at position 14"),
        (
            {"judge_rows": [0.5] * 5},
            "stratum 0 has 10 labelled rows but only 5 rows: the labelled rows are among the run's rows in this design",
        ),  # fmt: skip
        (
            {"judge_labelled": [0.5] * 9 + [math.inf]},
            "judge_labelled must be finite numbers, got inf at position 9",
        ),  # fmt: skip
        (
            {"judge_rows": [-math.inf] + [0.5] * 14},
            "judge_rows must be finite numbers, got -inf at position 0",
        ),
        ({"judge_labelled": [0.5] * 5}, "labels and judge_labelled must have one score per labelled row: 10 and 5"),
        (
            {"labels": [1.0], "judge_labelled": [1.0]},
            "need at least 2 labelled rows and some judge-scored rows, got 1 and 15",
        ),  # fmt: skip
        ({"judge_rows": []}, "need at least 2 labelled rows and some judge-scored rows, got 10 and 0"),
        ({"row_strata": A15}, "give the strata of both the labelled rows and the judge's rows, or of neither"),
        ({"labelled_strata": A10}, "give the strata of both the labelled rows and the judge's rows, or of neither"),
        (
            {"labelled_strata": ["a"] * 3, "row_strata": A15},
            "labelled_strata must give one stratum per row: 3 strata for 10 rows",
        ),  # fmt: skip
        (
            {"labelled_strata": [], "row_strata": A15},
            "labelled_strata must give one stratum per row: 0 strata for 10 rows",
        ),  # fmt: skip
        (
            {"labelled_strata": A10, "row_strata": ["a"] * 14},
            "row_strata must give one stratum per row: 14 strata for 15 rows",
        ),  # fmt: skip
        (
            {"labelled_strata": list("jihgfedcba"), "row_strata": A15},
            "labelled rows in strata the run does not hold: ['b', 'c', 'd', 'e', 'f']",
        ),  # fmt: skip
        (
            {"labelled_strata": ["a"] * 9 + ["b"], "row_strata": A10 + ["b"] * 5},
            "stratum 'b' has 5 rows but 1 labelled: label at least 2 in every stratum",
        ),  # fmt: skip
        (
            {"labelled_strata": ["a"] * 8 + ["b"] * 2, "row_strata": ["a"] * 5 + ["b"] * 10},
            "stratum 'a' has 8 labelled rows but only 5 rows: the labelled rows are among the run's rows in this design",
        ),  # fmt: skip
    ],
)
def test_bad_input_is_named_in_full(change, message):
    with pytest.raises(ValueError) as error:
        prediction_powered_mean(**{**GOOD, **change})
    assert str(error.value) == message


def test_the_independent_design_may_label_more_rows_of_a_stratum_than_it_scores():
    result = prediction_powered_mean(**{**GOOD, "design": "independent", "labelled_strata": ["a"] * 8 + ["b"] * 2,
                                        "row_strata": ["a"] * 5 + ["b"] * 10})  # fmt: skip
    assert result.strata == 2 and result.labels == 10


def test_strata_are_named_by_their_text_and_ordered_by_it():
    # 1 and "1" are one stratum; the weights follow the strata's names in text order ("10" before "9")
    y, f = pass_fail(3, 60)
    f = np.clip(f + np.linspace(0, 0.3, 60), 0, 1)
    keys = np.where(np.arange(60) < 30, 9, 10)
    by_number = prediction_powered_mean(labels=y[::2], judge_labelled=f[::2], judge_rows=f, design="run",
                                        labelled_strata=keys[::2].tolist(), row_strata=[str(k) for k in keys],
                                        guard=False)  # fmt: skip
    first_ten = prediction_powered_mean(labels=y[30::2], judge_labelled=f[30::2], judge_rows=f[30:], design="run",
                                        guard=False)  # fmt: skip
    assert by_number.strata == 2 and by_number.weights[0] == pytest.approx(first_ten.weights[0], abs=1e-15)


def test_a_stratum_the_guard_distrusts_is_named_in_the_note_and_keeps_its_labels_alone():
    y, f = graded(8, 400)
    strata = np.where(np.arange(400) < 200, "trusted", "noise")
    f = np.where(strata == "noise", np.random.default_rng(2).random(400), f)  # the judge ignores the second half
    lab = np.r_[0:200:4, 200:400:4]
    result = prediction_powered_mean(labels=y[lab], judge_labelled=f[lab], judge_rows=f, design="run",
                                     labelled_strata=strata[lab].tolist(), row_strata=strata.tolist())  # fmt: skip
    assert result.note == (
        "in some strata the judge's correlation with people is too weak to trust (at most 1/sqrt(n - 2)): "
        "there the labels stand alone"
    )
    noise_weight, trusted_weight = result.weights  # the strata in text order
    assert noise_weight == 0.0 and trusted_weight > 0 and result.method == "ppi++"


def test_two_labelled_rows_are_the_least_it_takes_and_give_the_formulas_answer():
    """At exactly two labels the estimate exists (one fewer is refused above): with no tuning the mean of the
    judge's rows plus the labels' mean gap, inside a finite interval; the labels alone centre on their mean."""
    y, f, rows = np.array([1.0, 0.0]), np.array([1.0, 1.0]), np.array([1.0, 1.0, 0.0, 1.0, 0.0])
    result = prediction_powered_mean(labels=y, judge_labelled=f, judge_rows=rows, design="population",
                                     tuning="none", guard=False, small_sample=True)  # fmt: skip
    assert result.labels == 2
    assert result.estimate == pytest.approx(rows.mean() + (y - f).mean(), abs=1e-12)
    assert math.isfinite(result.low) and result.low < result.estimate < result.high and math.isfinite(result.high)
    assert result.labels_only.estimate == pytest.approx(0.5, abs=1e-12)


def test_strata_are_told_apart_by_their_whole_text():
    # numpy's fixed-width text arrays drop trailing NUL characters: the keys are kept as Python strings
    result = prediction_powered_mean(**{**GOOD, "labelled_strata": ["a"] * 5 + ["a\x00"] * 5,
                                        "row_strata": ["a"] * 8 + ["a\x00"] * 7})  # fmt: skip
    assert result.strata == 2


def test_small_sample_is_the_default():
    y, f = graded(5, 30)
    default = prediction_powered_mean(labels=y[:8], judge_labelled=f[:8], judge_rows=f, design="run")
    assert default == prediction_powered_mean(labels=y[:8], judge_labelled=f[:8], judge_rows=f, design="run",
                                              small_sample=True)  # fmt: skip
    plain = prediction_powered_mean(labels=y[:8], judge_labelled=f[:8], judge_rows=f, design="run", small_sample=False)
    assert default.high - default.low > plain.high - plain.low


def test_a_judge_that_matches_people_exactly_leaves_no_uncertainty_and_is_worth_infinitely_many_labels():
    y, _ = graded(6, 50)
    result = prediction_powered_mean(labels=y[:10], judge_labelled=y[:10], judge_rows=y, design="run",
                                     tuning="none", small_sample=False)  # fmt: skip
    assert (result.standard_error, result.low, result.high) == (0.0, result.estimate, result.estimate)
    assert result.estimate == pytest.approx(y.mean(), abs=1e-15) and result.effective_labels == math.inf
    assert result.in_words() == "the labels alone leave no uncertainty here"


def _uninformative(seed: int):
    """A small stratified pass/fail run whose tuned judge widens the interval (found by a seeded search)."""
    rng = np.random.default_rng(seed)
    rows = int(rng.integers(12, 40))
    y = (rng.random(rows) < rng.uniform(0.2, 0.9)).astype(float)
    f = np.clip(rng.uniform(-0.5, 1) * y + rng.normal(size=rows) * rng.uniform(0.1, 1), -3, 3)
    strata = np.where(rng.random(rows) < 0.5, "a", "b")
    lab = rng.random(rows) < rng.uniform(0.3, 0.9)
    return dict(labels=y[lab], judge_labelled=f[lab], judge_rows=f, labelled_strata=strata[lab].tolist(),
                row_strata=strata.tolist())  # fmt: skip


@pytest.mark.parametrize("design", ["run", "population"])
def test_when_the_tuned_interval_is_no_narrower_the_labels_stand_alone_with_their_own_degrees_of_freedom(design):
    runs = _uninformative(142)
    assert any(prediction_powered_mean(**runs, design=design, guard=False).weights)  # the judge had weight
    result = prediction_powered_mean(**runs, design=design)
    alone = prediction_powered_mean(**runs, design=design, tuning="labels")
    assert (result.method, result.weights, alone.note) == ("labels", (0.0, 0.0), None)
    assert result.note == "the judge did not narrow the interval: the labels stand alone"
    # the same interval as the labels alone, Student's quantile included (the strata's labels-only variances)
    assert tuple(result) == tuple(alone) and result.labels_only == alone.labels_only
    assert (result.standard_error, result.effective_labels) == (alone.standard_error, alone.effective_labels)


def test_a_weight_that_widens_the_interval_falls_back_to_the_labels_own_degrees_of_freedom():
    # independent design: the pooled weight (ppi-python's) reads the judge's variance over both sets, and on rows
    # where it is constant that variance is small, so the weight is too large (1 in stratum b): both strata's
    # tuned variances exceed the labels' own, and Student's quantile must come from the labels' variances
    y = np.array([1, 0, 1, 1, 0, 1, 0, 1, 1, 0, 1, 1, 0, 1, 0, 0, 1, 1], dtype=float)
    noise = np.array([3, -2, 1, -4, 2, 0, -1, 4, -3, 1, 2, -2, 3, -1, 0, 4, -4, 1]) / 10
    f = 3 * y + 4 * noise
    runs = dict(labels=y, judge_labelled=f, judge_rows=np.array([f[:10].mean()] * 30 + [f[10:].mean()] * 30),
                labelled_strata=["a"] * 10 + ["b"] * 8, row_strata=["a"] * 30 + ["b"] * 30, design="independent")  # fmt: skip
    unguarded = prediction_powered_mean(**runs, guard=False)
    assert all(unguarded.weights) and unguarded.high - unguarded.low > 2 * (
        unguarded.labels_only.high - unguarded.labels_only.estimate
    )
    result = prediction_powered_mean(**runs)
    alone = prediction_powered_mean(**runs, tuning="labels")
    assert (result.method, result.weights) == ("labels", (0.0, 0.0))
    assert result.note == "the judge did not narrow the interval: the labels stand alone"
    assert tuple(result) == tuple(alone) and result.labels_only == alone.labels_only

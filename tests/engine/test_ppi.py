"""Prediction-powered estimates, checked against ppi-python and by seeded coverage simulations.

* ppi-python (``ppi_py.ppi_mean_ci`` with its power tuning, ``lam=None``) on shared inputs: the
  ``"independent"`` design reproduces its estimate and bounds to 1e-6, stratum by stratum.
* The issue's measured numbers: a judge like the spec's, a run of 2,000, 200 random labels.
* Coverage against a known truth, for each design and for the paired difference: a fast version
  here (a few hundred replications), a long one marked ``slow`` (>= 94 % at 95 %).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from scipy import stats

from evalcore.engine._ppi import t_quantile
from evalcore.engine.judge import Stratum, corrected_pass_rate
from evalcore.engine.ppi import prediction_powered_difference, prediction_powered_mean

Z = 1.959963984540054
SE, SP, PASS = 0.947, 0.56, 0.75  # the spec's judge: passes 142 of 150 supported answers, fails 28 of 50 unsupported


def spec_judge(y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A judge like the spec's: passes 94.7 % of what people pass and 44 % of what they fail."""
    return np.where(y == 1, rng.random(y.size) < SE, rng.random(y.size) < 1 - SP).astype(float)


def graded(rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
    """A graded metric (a mean score in [0, 1]) and a noisy, biased judge of it."""
    y = rng.beta(4, 1.5, size)
    f = np.clip(0.15 + 0.8 * y + rng.normal(0, 0.12, size), 0, 1)
    return y, f


# ----------------------------------------------------------------------------------------------
# ppi-python on shared inputs
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("kind", ["pass_fail", "graded"])
def test_the_independent_design_is_ppi_pythons_ppi_mean_ci_to_1e6(seed, kind):
    rng = np.random.default_rng(seed)
    if kind == "pass_fail":
        y = (rng.random(1200) < PASS).astype(float)
        f = spec_judge(y, rng)
    else:
        y, f = graded(rng, 1200)
    n = 150 + 30 * seed
    lab, unl = slice(0, n), slice(n, None)

    ours = prediction_powered_mean(
        labels=y[lab], judge_labelled=f[lab], judge_rows=f[unl], design="independent", guard=False, small_sample=False
    )
    low, high = ppi_mean_ci(y[lab], f[lab], f[unl], alpha=0.05)
    point = ppi_mean_pointestimate(y[lab], f[lab], f[unl])

    assert ours.estimate == pytest.approx(float(np.ravel(point)[0]), abs=1e-6)
    assert (ours.low, ours.high) == pytest.approx((float(np.ravel(low)[0]), float(np.ravel(high)[0])), abs=1e-6)
    assert ours.method == "ppi++" and 0 < ours.weights[0] <= 1


@pytest.mark.parametrize("lam", [0.0, 0.5, 1.0])
def test_a_fixed_weight_is_ppi_pythons_interval_with_that_lam(lam):
    rng = np.random.default_rng(11)
    y, f = graded(rng, 900)
    ours = prediction_powered_mean(labels=y[:200], judge_labelled=f[:200], judge_rows=f[200:], design="independent",
                                   tuning=lam, small_sample=False)  # fmt: skip
    low, high = ppi_mean_ci(y[:200], f[:200], f[200:], alpha=0.05, lam=lam)
    assert (ours.low, ours.high) == pytest.approx((float(np.ravel(low)[0]), float(np.ravel(high)[0])), abs=1e-6)


def test_stratified_ppi_combines_ppi_pythons_stratum_estimates_by_the_strata_shares():
    rng = np.random.default_rng(3)
    y, f = graded(rng, 3000)
    strata = np.where(rng.random(3000) < 0.3, "numeric", "prose")
    labelled = np.zeros(3000, bool)
    for name, count in (("numeric", 120), ("prose", 120)):  # the rarer slice oversampled
        labelled[rng.choice(np.flatnonzero(strata == name), count, replace=False)] = True

    ours = prediction_powered_mean(labels=y[labelled], judge_labelled=f[labelled], judge_rows=f[~labelled],
                                   labelled_strata=strata[labelled], row_strata=strata[~labelled],
                                   design="independent", guard=False, small_sample=False)  # fmt: skip

    estimate = variance = 0.0
    means = []
    for name in ("numeric", "prose"):
        lab, unl = labelled & (strata == name), ~labelled & (strata == name)
        share = unl.sum() / (~labelled).sum()
        low, high = (float(np.ravel(b)[0]) for b in ppi_mean_ci(y[lab], f[lab], f[unl], alpha=0.05))
        estimate += share * (low + high) / 2
        variance += share**2 * ((high - low) / (2 * Z)) ** 2
        means.append((share, (low + high) / 2))
    # the strata's shares are estimated from the unlabelled rows: their variance adds sum W (m_h - m)^2 / N
    variance += sum(w * (m - estimate) ** 2 for w, m in means) / (~labelled).sum()
    assert ours.estimate == pytest.approx(estimate, abs=1e-6)
    assert ours.standard_error == pytest.approx(math.sqrt(variance), abs=1e-6)
    assert ours.strata == 2


def test_the_run_design_has_ppi_pythons_point_estimate_over_every_row_but_no_run_sampling_error():
    rng = np.random.default_rng(5)
    y = (rng.random(2000) < PASS).astype(float)
    f = spec_judge(y, rng)
    lab = rng.choice(2000, 200, replace=False)
    run = prediction_powered_mean(labels=y[lab], judge_labelled=f[lab], judge_rows=f, design="run", tuning=0.6,
                                  small_sample=False)  # fmt: skip
    population = prediction_powered_mean(labels=y[lab], judge_labelled=f[lab], judge_rows=f, design="population",
                                         tuning=0.6, small_sample=False)  # fmt: skip
    point = float(np.ravel(ppi_mean_pointestimate(y[lab], f[lab], f, lam=0.6))[0])
    assert run.estimate == pytest.approx(point, abs=1e-9) == pytest.approx(population.estimate, abs=1e-9)
    residual = y[lab] - 0.6 * f[lab]
    assert run.standard_error == pytest.approx(math.sqrt((1 - 200 / 2000) * residual.var(ddof=1) / 200))
    assert population.standard_error**2 == pytest.approx(run.standard_error**2 + y[lab].var(ddof=1) / 2000)


# ----------------------------------------------------------------------------------------------
# The issue's numbers: a judge like the spec's, a run of 2,000, 200 random labels
# ----------------------------------------------------------------------------------------------


def half_widths(design: str, replications: int, seed: int = 2026) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    out = {"labels": [], "ppi": [], "reference": [], "rogan_gladen": []}
    for _ in range(replications):
        y = (rng.random(2000) < PASS).astype(float)
        f = spec_judge(y, rng)
        lab = rng.choice(2000, 200, replace=False)
        rows = f if design != "independent" else np.delete(f, lab)
        r = prediction_powered_mean(labels=y[lab], judge_labelled=f[lab], judge_rows=rows, design=design)
        out["labels"].append(Z * math.sqrt(y[lab].var(ddof=1) / 200))
        out["ppi"].append(r.high - r.estimate)
        low, high = ppi_mean_ci(y[lab], f[lab], f, alpha=0.05)
        out["reference"].append(float(np.ravel(high - low)[0]) / 2)
    return {k: float(np.mean(v)) for k, v in out.items() if v}


def test_the_issues_numbers_labels_alone_059_ppi_050_and_the_judge_worth_about_1_4x():
    widths = half_widths("independent", 200)
    assert widths["labels"] == pytest.approx(0.059, abs=0.002)
    assert widths["reference"] == pytest.approx(0.050, abs=0.002)  # ppi_mean_ci on the 2,000 rows, as the issue ran
    assert widths["ppi"] == pytest.approx(0.050, abs=0.002)
    run = half_widths("run", 200)
    assert run["ppi"] == pytest.approx(0.046, abs=0.002)  # the run's own rate: no sampling error of the run

    rng = np.random.default_rng(1)
    y = (rng.random(2000) < PASS).astype(float)
    f = spec_judge(y, rng)
    lab = rng.choice(2000, 200, replace=False)
    r = prediction_powered_mean(labels=y[lab], judge_labelled=f[lab], judge_rows=f, design="run")
    assert 1.2 < r.worth < 1.9
    assert r.in_words().startswith(f"the judge was worth {r.worth:.1f}× the labels: 200 labels did the work of")


# ----------------------------------------------------------------------------------------------
# The guard and bad input
# ----------------------------------------------------------------------------------------------


def test_a_judge_that_says_nothing_about_people_falls_back_to_the_labels_alone():
    rng = np.random.default_rng(8)
    y = (rng.random(2000) < PASS).astype(float)
    noise = (rng.random(2000) < 0.5).astype(float)  # independent of the truth
    fell_back = 0
    for seed in range(30):
        lab = np.random.default_rng(seed).choice(2000, 100, replace=False)
        r = prediction_powered_mean(labels=y[lab], judge_labelled=noise[lab], judge_rows=noise, design="run")
        fell_back += r.method == "labels"
        if r.method == "labels":
            assert r.estimate == pytest.approx(y[lab].mean())
            assert r.note or r.weights == (0.0,)  # the guard's, or a negative correlation clipped to weight 0
            assert (r.low, r.high) == pytest.approx((r.labels_only.low, r.labels_only.high))
    assert fell_back >= 25  # without the guard, PPI++ tunes on noise (arXiv 2505.20178)
    unguarded = prediction_powered_mean(labels=y[lab], judge_labelled=noise[lab], judge_rows=noise, design="run",
                                        guard=False)  # fmt: skip
    assert unguarded.method in ("ppi++", "labels")


def test_a_pass_fail_judge_stratified_by_its_verdicts_is_the_post_stratified_estimate():
    rng = np.random.default_rng(4)
    y = (rng.random(2000) < PASS).astype(float)
    f = spec_judge(y, rng)
    strata = np.where(f == 1, "judge passed", "judge failed")
    lab = np.concatenate([rng.choice(np.flatnonzero(f == v), 100, replace=False) for v in (1, 0)])
    r = prediction_powered_mean(labels=y[lab], judge_labelled=f[lab], judge_rows=f, labelled_strata=strata[lab],
                                row_strata=strata, design="run")  # fmt: skip
    post = sum((f == v).mean() * y[lab][f[lab] == v].mean() for v in (1, 0))
    assert r.estimate == pytest.approx(post)
    # and it is Rogan-Gladen on the campaign's own run, weighted by the strata
    rg = corrected_pass_rate(run_passes=int(f.sum()), run_total=2000, labels_from_run=True, iterations=2000, strata=[
        Stratum.of(judge_pass=bool(v), labelled=100, human_pass=int(y[lab][f[lab] == v].sum()),
                   population=int((f == v).sum())) for v in (1, 0)])  # fmt: skip
    assert rg.estimate == pytest.approx(post)
    assert (rg.high - rg.low) / 2 == pytest.approx(r.high - r.estimate, rel=0.15)


def test_bad_input_names_what_is_wrong():
    y, f = np.ones(10), np.ones(10)
    with pytest.raises(TypeError):
        prediction_powered_mean(labels=y, judge_labelled=f, judge_rows=f)  # the design is never defaulted
    with pytest.raises(ValueError, match="design must be one of"):
        prediction_powered_mean(labels=y, judge_labelled=f, judge_rows=f, design="random")
    with pytest.raises(ValueError, match="one score per labelled row"):
        prediction_powered_mean(labels=y, judge_labelled=f[:5], judge_rows=f, design="run")
    with pytest.raises(ValueError, match="finite"):
        prediction_powered_mean(labels=[1, np.nan], judge_labelled=[1, 1], judge_rows=f, design="run")
    with pytest.raises(ValueError, match="both"):
        prediction_powered_mean(labels=y, judge_labelled=f, judge_rows=f, design="run", row_strata=["a"] * 10)
    with pytest.raises(ValueError, match="stratum 'b' has 5 rows but 0 labelled"):
        prediction_powered_mean(labels=y, judge_labelled=f, judge_rows=np.ones(15), design="run",
                                labelled_strata=["a"] * 10, row_strata=["a"] * 10 + ["b"] * 5)  # fmt: skip
    with pytest.raises(ValueError, match="tuning"):
        prediction_powered_mean(labels=y, judge_labelled=f, judge_rows=f, design="run", tuning="best")
    with pytest.raises(ValueError, match="at least 2 in every stratum"):
        prediction_powered_difference(base_judge=f, candidate_judge=f, base_labels=y,
                                      candidate_labels=np.full(10, np.nan), design="run")  # fmt: skip
    with pytest.raises(ValueError, match="design must be one of"):
        prediction_powered_difference(base_judge=f, candidate_judge=f, base_labels=y, candidate_labels=y,
                                      design="independent")  # fmt: skip


# ----------------------------------------------------------------------------------------------
# Coverage against a known truth
# ----------------------------------------------------------------------------------------------


def mean_coverage(design: str, replications: int, *, seed: int, stratified: bool = False, kind: str = "pass_fail"):
    """Coverage and mean half-width of the PPI++ and the labels-only intervals of a run's mean."""
    rng = np.random.default_rng(seed)
    population = 2000
    if kind == "pass_fail":
        y_fixed = (rng.random(population) < PASS).astype(float)
        f_fixed = spec_judge(y_fixed, rng)
    else:
        y_fixed, f_fixed = graded(rng, population)
    covered = labels_covered = 0
    widths, label_widths = [], []
    for _ in range(replications):
        if design == "run":  # one run, many campaigns on it: the truth is the run's own mean
            y, f, truth = y_fixed, f_fixed, y_fixed.mean()
        else:  # a fresh run each time: the truth is the population's
            if kind == "pass_fail":
                y = (rng.random(population) < PASS).astype(float)
                f = spec_judge(y, rng)
                truth = PASS
            else:
                y, f = graded(rng, population)
                truth = 4 / 5.5
        rows, row_strata = f, np.where(f >= 0.5, "high", "low")
        if design == "independent":  # the labelled rows come from another draw than the scored ones
            if kind == "pass_fail":
                y = (rng.random(population) < PASS).astype(float)
                f = spec_judge(y, rng)
            else:
                y, f = graded(rng, population)
        strata = np.where(f >= 0.5, "high", "low")
        if stratified:
            lab = np.concatenate([rng.choice(np.flatnonzero(strata == s), 100, replace=False) for s in ("high", "low")])
        else:
            lab = rng.choice(population, 200, replace=False)
        kwargs = dict(labelled_strata=strata[lab], row_strata=row_strata) if stratified else {}
        r = prediction_powered_mean(labels=y[lab], judge_labelled=f[lab], judge_rows=rows, design=design, **kwargs)
        covered += r.low <= truth <= r.high
        labels_covered += r.labels_only.low <= truth <= r.labels_only.high
        widths.append(r.high - r.estimate)
        label_widths.append(r.labels_only.high - r.labels_only.estimate)
    return covered / replications, labels_covered / replications, float(np.mean(widths)), float(np.mean(label_widths))


def difference_coverage(design: str, replications: int, *, seed: int, labelled: str):
    """Coverage of the paired difference's interval: a candidate that flips 10 % of the base's outcomes."""
    rng = np.random.default_rng(seed)
    questions = 2000
    covered, widths = 0, []
    ya_fixed = (rng.random(questions) < PASS).astype(float)
    yb_fixed = np.where(rng.random(questions) < 0.9, ya_fixed, 1 - ya_fixed)
    fa_fixed, fb_fixed = spec_judge(ya_fixed, rng), spec_judge(yb_fixed, rng)
    for _ in range(replications):
        if design == "run":
            ya, yb, fa, fb = ya_fixed, yb_fixed, fa_fixed, fb_fixed
            truth = yb.mean() - ya.mean()
        else:
            ya = (rng.random(questions) < PASS).astype(float)
            yb = np.where(rng.random(questions) < 0.9, ya, 1 - ya)
            fa, fb = spec_judge(ya, rng), spec_judge(yb, rng)
            truth = 0.1 * (1 - PASS) - 0.1 * PASS  # E[yb - ya]
        on_a = np.zeros(questions, bool)
        on_a[rng.choice(questions, 300, replace=False)] = True
        if labelled == "same questions":
            on_b = on_a
        else:
            on_b = np.zeros(questions, bool)
            on_b[rng.choice(questions, 300, replace=False)] = True
        r = prediction_powered_difference(base_judge=fa, candidate_judge=fb, base_labels=np.where(on_a, ya, np.nan),
                                          candidate_labels=np.where(on_b, yb, np.nan), design=design)  # fmt: skip
        covered += r.low <= truth <= r.high
        widths.append(r.high - r.estimate)
    return covered / replications, float(np.mean(widths))


FAST = 300  # three Monte Carlo standard errors of coverage at 95 %: about 3.8 points


@pytest.mark.parametrize("design", ["run", "population", "independent"])
@pytest.mark.parametrize("stratified", [False, True], ids=["random sample", "stratified"])
def test_the_interval_covers_the_truth_95_percent_of_the_time_fast(design, stratified):
    coverage, labels_coverage, width, labels_width = mean_coverage(design, FAST, seed=17, stratified=stratified)
    assert coverage >= 0.91, f"{design}: covered {coverage:.3f}"
    assert labels_coverage >= 0.91
    assert width < labels_width or stratified  # stratified by the judge, the labels alone already use it


@pytest.mark.parametrize("labelled", ["same questions", "separate samples"])
def test_the_difference_covers_the_truth_95_percent_of_the_time_fast(labelled):
    coverage, _ = difference_coverage("population", FAST, seed=23, labelled=labelled)
    assert coverage >= 0.91, f"{labelled}: covered {coverage:.3f}"


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["pass_fail", "graded"])
@pytest.mark.parametrize("design", ["run", "population", "independent"])
@pytest.mark.parametrize("stratified", [False, True], ids=["random sample", "stratified"])
def test_the_interval_covers_the_truth_at_least_94_percent_over_4000_campaigns(design, stratified, kind):
    coverage, labels_coverage, width, labels_width = mean_coverage(design, 4000, seed=29, stratified=stratified,
                                                                   kind=kind)  # fmt: skip
    assert coverage >= 0.94, f"{design} {kind}: covered {coverage:.3f}, half-width {width:.4f} vs {labels_width:.4f}"
    assert coverage <= 0.97, f"{design} {kind}: covered {coverage:.3f}: too wide"


@pytest.mark.slow
@pytest.mark.parametrize("design", ["run", "population"])
@pytest.mark.parametrize("labelled", ["same questions", "separate samples"])
def test_the_difference_covers_the_truth_at_least_94_percent_over_4000_comparisons(design, labelled):
    coverage, width = difference_coverage(design, 4000, seed=31, labelled=labelled)
    assert 0.94 <= coverage <= 0.97, f"{design}, {labelled}: covered {coverage:.3f}, half-width {width:.4f}"


def test_independent_strata_add_the_variance_of_their_means_about_the_overall_mean_over_the_rows():
    # estimated shares: each stratum's own variance at its share squared, plus sum_h share_h (m_h - m)^2 / N
    rng = np.random.default_rng(41)
    y = np.concatenate([rng.random(30) * 0.4 + 0.6, rng.random(40) * 0.4])
    f = rng.random(70)
    rows = rng.random(400)
    lab_strata = ["a"] * 30 + ["b"] * 40
    row_strata = ["a"] * 100 + ["b"] * 300
    common = dict(design="independent", tuning="labels", small_sample=False)
    both = prediction_powered_mean(
        labels=y, judge_labelled=f, judge_rows=rows, labelled_strata=lab_strata, row_strata=row_strata, **common
    )
    alone = [
        prediction_powered_mean(labels=y[part], judge_labelled=f[part], judge_rows=rows[:n], **common)
        for part, n in ((slice(0, 30), 100), (slice(30, 70), 300))
    ]
    shares, means = np.array([0.25, 0.75]), np.array([y[:30].mean(), y[30:].mean()])
    overall = float(shares @ means)
    between = float(shares @ (means - overall) ** 2) / 400
    within = float(shares**2 @ [r.standard_error**2 for r in alone])
    assert both.estimate == pytest.approx(overall, rel=1e-12)
    assert both.standard_error**2 == pytest.approx(within + between, rel=1e-9)
    assert between > 0.05 * within  # the term is large enough here to be seen


def test_with_no_uncertainty_left_the_judge_s_worth_is_not_a_number_and_says_so():
    from evalcore.engine import Interval
    from evalcore.engine.ppi import PredictionPowered

    fields = dict(standard_error=0.0, method="labels", labels_only=Interval(1.0, 1.0, 1.0), judge_raw=1.0)
    for labels, effective in ((10, math.inf), (0, 0.0)):
        r = PredictionPowered(
            1.0, 1.0, 1.0, **fields, labels=labels, effective_labels=effective, weights=(0.0,), strata=1,
            design="run", confidence=0.95,
        )  # fmt: skip
        assert r.in_words() == "the labels alone leave no uncertainty here"


def _difference_variance(ya, yb, fa, fb, lam_a, lam_b):
    """The documented variance of a one-stratum paired difference at weights (lam_a, lam_b), written out."""
    has_a, has_b = ~np.isnan(ya), ~np.isnan(yb)
    both = has_a & has_b
    n_a, n_b, m, rows = has_a.sum(), has_b.sum(), both.sum(), ya.size
    ra, rb = ya - lam_a * fa, yb - lam_b * fb
    overlap = np.cov(ra[both], rb[both])[0, 1] * (m / (n_a * n_b) - 1 / rows)
    return (
        (1 / n_a - 1 / rows) * np.var(ra[has_a], ddof=1)
        + (1 / n_b - 1 / rows) * np.var(rb[has_b], ddof=1)
        - 2 * overlap
    )


def test_the_tuned_weights_of_a_difference_minimise_its_variance_over_both_weights():
    rng = np.random.default_rng(43)
    rows = 400
    truth_a, truth_b = rng.random(rows), rng.random(rows)
    fa = truth_a + rng.normal(0, 0.25, rows)  # the judge tracks the base run well, the candidate less so
    fb = truth_b + rng.normal(0, 0.5, rows)
    ya, yb = truth_a + rng.normal(0, 0.1, rows), 0.5 * truth_a + truth_b + rng.normal(0, 0.1, rows)
    ya[150:], yb[:70], yb[220:] = np.nan, np.nan, np.nan  # base labelled 0-149, candidate 70-219: 80 on both
    result = prediction_powered_difference(
        base_judge=fa, candidate_judge=fb, base_labels=ya, candidate_labels=yb, design="run", guard=False
    )
    ((lam_a, lam_b),) = result.weights
    assert 0.05 < lam_a < 0.95 and 0.05 < lam_b < 0.95  # an inside optimum: both weights matter
    # the variance is a convex quadratic in the weights: no step in any direction lowers it
    at = _difference_variance(ya, yb, fa, fb, lam_a, lam_b)
    for da, db in ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, -1), (1, -1), (-1, 1)):
        assert _difference_variance(ya, yb, fa, fb, lam_a + 0.01 * da, lam_b + 0.01 * db) > at
    variance = _difference_variance(ya, yb, fa, fb, lam_a, lam_b)
    assert result.standard_error**2 == pytest.approx(variance, rel=1e-9)


@pytest.mark.parametrize("confidence", [0.90, 0.95, 0.975, 0.99])
@pytest.mark.parametrize("df", [3, 4.2, 10, 14.5, 30, 100, 1000])
def test_the_t_quantile_is_students_at_fractional_degrees_of_freedom(confidence, df):
    z = float(stats.norm.ppf(confidence))
    assert t_quantile(z, df) == pytest.approx(float(stats.t.ppf(confidence, df)), abs=1e-9)
    assert t_quantile(z, df) > z  # Student's tails are always heavier than the normal's


@pytest.mark.parametrize("df", [math.inf, -math.inf, math.nan, 0.0, -2.0])
def test_the_t_quantile_without_usable_degrees_of_freedom_is_the_normal_one(df):
    assert t_quantile(1.959964, df) == 1.959964


def test_the_t_quantile_holds_degrees_of_freedom_under_three_at_three():
    # one or two labelled rows a stratum would give a quantile in the tens: they are widened as if they had three
    at_three = float(stats.t.ppf(stats.norm.cdf(1.959964), 3))
    assert t_quantile(1.959964, 1.0) == t_quantile(1.959964, 2.5) == pytest.approx(at_three, rel=1e-12)
    assert t_quantile(1.959964, 3.5) < at_three

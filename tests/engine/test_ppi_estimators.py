"""Every estimator of a judge metric side by side, on the same seeded campaigns: coverage and mean half-width.

The issue's setting: the spec's judge (:func:`tests.engine.test_ppi.spec_judge`), a run of 2,000, 200
labels drawn at random; for the paired difference two runs of the same 2,000 questions (the candidate
flips a tenth of the baseline's outcomes) with 300 questions labelled on both. Estimators: PPI (the
judge's weight fixed at 1), PPI++ (power-tuned, with the guard), Rogan–Gladen (the engine's bootstrap),
the labels alone, and ppi-python's ``ppi_mean_ci`` (``lam=None``, power-tuned). Two estimands:

* ``run``: the campaign's own run (the judge report's case: one fixed run, many campaigns on it; the
  truth is the run's own rate). ``ppi_mean_ci`` assumes the rows were drawn from a population, so it
  counts the run's sampling error that this estimand does not have: it over-covers.
* ``population``: a fresh run each time, the truth the population's rate (the gate's case for a
  difference). Rogan–Gladen is then transported (``labels_from_run=False``: the run's pass count is
  resampled); for a difference the two runs' intervals are combined as if independent (their labels
  are on the same questions, so this ignores a positive covariance and is conservative).

``python -m tests.engine.test_ppi_estimators`` prints the table the docs quote.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from ppi_py import ppi_mean_ci

from evalcore.engine.judge import Stratum, corrected_pass_rate
from evalcore.engine.ppi import prediction_powered_difference, prediction_powered_mean
from tests.engine.test_ppi import PASS, spec_judge

ROWS, LABELS, PAIRED_LABELS, FLIP = 2000, 200, 300, 0.1
RG_ITERATIONS = 2000
ESTIMATORS = ("PPI", "PPI++", "Rogan–Gladen", "labels only", "ppi_mean_ci")


def rogan_gladen(y: np.ndarray, f: np.ndarray, lab: np.ndarray, *, from_run: bool, seed: int):
    """The engine's Rogan–Gladen on a random sample: one stratum per judge verdict, weighted population / labelled."""
    strata = []
    for verdict in (1.0, 0.0):
        labelled = lab[f[lab] == verdict]
        population = int(np.sum(f == verdict))
        if labelled.size:
            strata.append(
                Stratum(verdict == 1.0, int(labelled.size), int(y[labelled].sum()), population / labelled.size)
            )
    r = corrected_pass_rate(run_passes=int(f.sum()), run_total=f.size, strata=strata, labels_from_run=from_run,
                            iterations=RG_ITERATIONS, seed=seed)  # fmt: skip
    return r.estimate, r.low, r.high


def reference(y_lab: np.ndarray, f_lab: np.ndarray, f_unlabelled: np.ndarray) -> tuple[float, float]:
    low, high = ppi_mean_ci(y_lab, f_lab, f_unlabelled, alpha=0.05)
    return float(np.ravel(low)[0]), float(np.ravel(high)[0])


class Tally:
    def __init__(self) -> None:
        self.covered = dict.fromkeys(ESTIMATORS, 0)
        self.halves: dict[str, list[float]] = {name: [] for name in ESTIMATORS}
        self.n = 0

    def add(self, name: str, low: float, high: float, truth: float) -> None:
        self.covered[name] += bool(low <= truth <= high)
        self.halves[name].append((high - low) / 2)

    def table(self) -> dict[str, tuple[float, float]]:
        return {k: (self.covered[k] / self.n, float(np.mean(self.halves[k]))) for k in ESTIMATORS}


def single_run(design: str, replications: int, *, seed: int) -> dict[str, tuple[float, float]]:
    """Coverage and mean half-width of each estimator of one run's pass rate."""
    rng = np.random.default_rng(seed)
    y, f = (y0 := (rng.random(ROWS) < PASS).astype(float)), spec_judge(y0, rng)
    tally = Tally()
    for i in range(replications):
        if design == "population":
            y = (rng.random(ROWS) < PASS).astype(float)
            f = spec_judge(y, rng)
        truth = y.mean() if design == "run" else PASS
        lab = rng.choice(ROWS, LABELS, replace=False)
        for name, tuning in (("PPI", "none"), ("PPI++", "power")):
            r = prediction_powered_mean(labels=y[lab], judge_labelled=f[lab], judge_rows=f, design=design,
                                        tuning=tuning)  # fmt: skip
            tally.add(name, r.low, r.high, truth)
        tally.add("labels only", r.labels_only.low, r.labels_only.high, truth)
        _, low, high = rogan_gladen(y, f, lab, from_run=design == "run", seed=i)
        tally.add("Rogan–Gladen", low, high, truth)
        tally.add("ppi_mean_ci", *reference(y[lab], f[lab], np.delete(f, lab)), truth)
        tally.n += 1
    return tally.table()


def paired(design: str, replications: int, *, seed: int) -> dict[str, tuple[float, float]]:
    """Coverage and mean half-width of each estimator of the paired difference, candidate minus baseline."""
    rng = np.random.default_rng(seed)

    def runs():
        ya = (rng.random(ROWS) < PASS).astype(float)
        yb = np.where(rng.random(ROWS) < 1 - FLIP, ya, 1 - ya)
        return ya, yb, spec_judge(ya, rng), spec_judge(yb, rng)

    ya, yb, fa, fb = runs()
    tally = Tally()
    for i in range(replications):
        if design == "population":
            ya, yb, fa, fb = runs()
        truth = yb.mean() - ya.mean() if design == "run" else FLIP * (1 - PASS) - FLIP * PASS
        lab = rng.choice(ROWS, PAIRED_LABELS, replace=False)
        on = np.zeros(ROWS, bool)
        on[lab] = True
        for name, tuning in (("PPI", "none"), ("PPI++", "power")):
            r = prediction_powered_difference(base_judge=fa, candidate_judge=fb, base_labels=np.where(on, ya, np.nan),
                                              candidate_labels=np.where(on, yb, np.nan), design=design,
                                              tuning=tuning)  # fmt: skip
            tally.add(name, r.low, r.high, truth)
        tally.add("labels only", r.labels_only.low, r.labels_only.high, truth)
        base = rogan_gladen(ya, fa, lab, from_run=design == "run", seed=2 * i)
        cand = rogan_gladen(yb, fb, lab, from_run=design == "run", seed=2 * i + 1)
        half = math.hypot((base[2] - base[1]) / 2, (cand[2] - cand[1]) / 2)
        tally.add("Rogan–Gladen", cand[0] - base[0] - half, cand[0] - base[0] + half, truth)
        tally.add("ppi_mean_ci", *reference((yb - ya)[lab], (fb - fa)[lab], np.delete(fb - fa, lab)), truth)
        tally.n += 1
    return tally.table()


def test_every_estimator_side_by_side_fast():
    found = single_run("population", 150, seed=3)
    assert found["PPI++"][1] < found["labels only"][1]  # the judge narrows the interval
    assert found["PPI++"][1] == pytest.approx(found["ppi_mean_ci"][1], abs=0.003)  # ppi-python's, on the same rows
    assert all(coverage >= 0.88 for coverage, _ in found.values())  # 150 replications: standard error 1.8 points
    difference = paired("population", 150, seed=4)
    assert difference["PPI++"][1] < difference["labels only"][1]


@pytest.mark.slow
@pytest.mark.parametrize("design", ["run", "population"])
def test_every_estimator_covers_at_least_94_percent_over_4000_campaigns(design):
    for found in (single_run(design, 4000, seed=53), paired(design, 4000, seed=59)):
        for name, (coverage, half) in found.items():
            assert coverage >= 0.94, f"{design} {name}: covered {coverage:.3f}, half-width {half:.4f}"
        assert found["PPI++"][1] <= found["PPI"][1] + 1e-3 and found["PPI++"][1] < found["labels only"][1]


if __name__ == "__main__":
    for what, simulate, seed in (("one run", single_run, 53), ("paired difference", paired, 59)):
        for design in ("run", "population"):
            found = simulate(design, 4000, seed=seed)
            print(f"{what}, {design}: " + "; ".join(f"{k} {c:.3f} ± {h:.4f}" for k, (c, h) in found.items()))

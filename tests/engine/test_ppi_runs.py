"""The prediction-powered difference between two runs labelled by two campaigns, and the gate cells it decides.

* It is the difference of the two runs' own prediction-powered means, its variance theirs plus the
  questions' sampling error once.
* ``gate_frame(evidence=...)``: a cell decided on it is in the family Holm corrects; its own decision is kept.
* Seeded simulations at a true population difference of exactly minus the margin, campaigns stratified by
  slice x verdict and over-sampling the judge's fails as campaigns do: the ppi-corrected cell passes at most alpha = 2.5 %
  of the time, and its interval covers the truth 95 % (a fast version here, a long one marked ``slow``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evalcore.engine import decide, gate_frame
from evalcore.engine.paired_proportions import tango_interval
from evalcore.engine.ppi import prediction_powered_mean
from evalcore.engine.ppi_runs import drop_p_value, gate_evidence, prediction_powered_run_difference

MARGIN = 0.02


def population_runs(rng: np.random.Generator, size: int) -> dict[str, np.ndarray]:
    """Two runs on ``size`` questions: people pass 80 % of the baseline and 78 % of the candidate's answers
    (exactly minus the margin in the population); the judge passes 95 % of what people pass and 40 % of what
    they fail on the baseline, 55 % on the candidate (so its raw difference is biased upwards)."""
    kind = rng.random(size) < 0.4
    ya = (rng.random(size) < 0.8).astype(float)
    flip = np.where(ya == 1, rng.random(size) < 0.05, rng.random(size) < 0.1)  # 0.8 * 0.95 + 0.2 * 0.1 = 0.78
    yb = np.where(flip, 1 - ya, ya)

    def judge(y: np.ndarray, false_pass: float) -> np.ndarray:
        return np.where(y == 1, rng.random(size) < 0.95, rng.random(size) < false_pass).astype(float)

    return {"kind": kind, "ya": ya, "yb": yb, "fa": judge(ya, 0.4), "fb": judge(yb, 0.55)}


def campaign(
    rng: np.random.Generator, kind: np.ndarray, verdict: np.ndarray, labels: int, *, fail_share: float = 0.25
) -> np.ndarray:
    """A campaign's sample: strata slice x verdict, ``fail_share`` of the labels on the judge's fails (over-sampled
    from about 16 %: the campaigns' own ``min_class_share``), spread over the slices in proportion."""
    strata = np.char.add(np.where(kind, "a", "b"), np.where(verdict == 1, "+", "-"))
    chosen = []
    for name in np.unique(strata):
        members = np.flatnonzero(strata == name)
        side = fail_share if verdict[members[0]] == 0 else 1 - fail_share
        share = side * members.size / np.sum(verdict == verdict[members[0]])
        take = max(2, min(members.size, int(round(labels * share))))
        chosen.append(rng.choice(members, take, replace=False))
    return np.concatenate(chosen)


def corrected(data: dict[str, np.ndarray], la: np.ndarray, lb: np.ndarray, **options):
    strata_a = np.char.add(np.where(data["kind"], "a", "b"), data["fa"].astype(int).astype(str))
    strata_b = np.char.add(np.where(data["kind"], "a", "b"), data["fb"].astype(int).astype(str))
    return prediction_powered_run_difference(
        base_labels=data["ya"][la],
        base_judge_labelled=data["fa"][la],
        base_judge_rows=data["fa"],
        base_labelled_strata=strata_a[la],
        base_row_strata=strata_a,
        candidate_labels=data["yb"][lb],
        candidate_judge_labelled=data["fb"][lb],
        candidate_judge_rows=data["fb"],
        candidate_labelled_strata=strata_b[lb],
        candidate_row_strata=strata_b,
        base_questions=la,
        candidate_questions=lb,
        **options,
    )


def test_the_difference_is_the_two_runs_own_estimates_apart():
    rng = np.random.default_rng(5)
    data = population_runs(rng, 1500)
    la, lb = campaign(rng, data["kind"], data["fa"], 200), campaign(rng, data["kind"], data["fb"], 200)
    d, base, cand = corrected(data, la, lb)
    strata_a = np.char.add(np.where(data["kind"], "a", "b"), data["fa"].astype(int).astype(str))
    alone = prediction_powered_mean(
        labels=data["ya"][la],
        judge_labelled=data["fa"][la],
        judge_rows=data["fa"],
        labelled_strata=strata_a[la],
        row_strata=strata_a,
        design="run",
    )
    assert base.estimate == pytest.approx(alone.estimate) and base.standard_error == pytest.approx(alone.standard_error)
    assert d.estimate == pytest.approx(cand.estimate - base.estimate)
    assert d.standard_error**2 >= base.standard_error**2 + cand.standard_error**2  # the questions' error, once
    assert d.labels == la.size + lb.size and d.design == "population"
    assert d.judge_raw == pytest.approx(data["fb"].mean() - data["fa"].mean())


def test_the_drop_test_is_one_sided_and_follows_the_direction():
    assert drop_p_value(0.0, 0.01) == pytest.approx(0.5)
    assert drop_p_value(-0.0392, 0.02) == pytest.approx(0.025, abs=1e-4)
    assert drop_p_value(0.0392, 0.02, higher_is_better=False) == pytest.approx(0.025, abs=1e-4)
    assert (drop_p_value(-0.1, 0.0), drop_p_value(0.1, 0.0)) == (0.0, 1.0)


def test_a_cell_decided_on_given_evidence_is_in_the_family_holm_corrects_and_its_own_decision_is_kept():
    rng = np.random.default_rng(2)
    base = pd.DataFrame({"faithfulness": (rng.random(400) < 0.8).astype(float), "rr": rng.random(400)})
    cand = base.copy()
    data = population_runs(rng, 400)
    la, lb = campaign(rng, data["kind"], data["fa"], 120), campaign(rng, data["kind"], data["fb"], 120)
    d, _, _ = corrected(data, la, lb)
    evidence = gate_evidence(d, higher_is_better=True, changed=400)
    report = gate_frame(base, cand, iterations=500, evidence={("faithfulness", "all"): evidence})
    faith = next(x for x in report.decisions if x.metric == "faithfulness")
    assert faith.interval_method == "ppi" and faith.test_method == "normal"
    assert (faith.mean, faith.low, faith.high) == (d.estimate, d.low, d.high)
    assert faith.family_size == 2 and faith.p_value == evidence.test.p_value
    others = [x.p_value for x in report.decisions if x.metric == "rr"]
    expected = (
        min(1.0, 2 * faith.p_value) if faith.p_value <= others[0] else max(faith.p_value, min(1.0, 2 * others[0]))
    )
    assert faith.p_adjusted == pytest.approx(expected)
    (own,) = report.replaced
    assert own.metric == "faithfulness" and own.mean == 0.0 and own.interval_method == "tango"


def random_labels(data: dict[str, np.ndarray], la: np.ndarray, lb: np.ndarray):
    """The labels alone, drawn at random (no judge, no strata): the same estimator with one stratum and weight 0."""
    one = np.zeros(data["ya"].size, dtype=int)
    return prediction_powered_run_difference(
        base_labels=data["ya"][la],
        base_judge_labelled=data["fa"][la],
        base_judge_rows=data["fa"],
        base_labelled_strata=one[la],
        base_row_strata=one,
        candidate_labels=data["yb"][lb],
        candidate_judge_labelled=data["fb"][lb],
        candidate_judge_rows=data["fb"],
        candidate_labelled_strata=one[lb],
        candidate_row_strata=one,
        base_questions=la,
        candidate_questions=lb,
        tuning="labels",
    )[0]


def simulate(replications: int, seed: int, *, size: int = 1000, labels: int = 150) -> dict[str, float]:
    """The ppi-corrected cell at a true difference of exactly -MARGIN: its pass rate, coverage and widths, beside
    the same number of random labels alone and the judge's raw paired interval (Tango's, as the gate's raw cell)."""
    rng = np.random.default_rng(seed)
    found = {"passes": 0, "covers": 0, "srs_covers": 0, "srs_passes": 0, "raw_covers": 0, "raw_passes": 0}
    widths: dict[str, list[float]] = {"ppi": [], "srs": [], "raw": []}
    for _ in range(replications):
        data = population_runs(rng, size)
        la, lb = campaign(rng, data["kind"], data["fa"], labels), campaign(rng, data["kind"], data["fb"], labels)
        d, _, _ = corrected(data, la, lb)
        srs = random_labels(data, rng.choice(size, la.size, replace=False), rng.choice(size, lb.size, replace=False))
        diffs = data["fb"] - data["fa"]
        raw = tango_interval(int(np.sum(diffs < 0)), int(np.sum(diffs > 0)), size)
        for name, interval, key in ((d, "", "ppi"), (srs, "srs_", "srs"), (raw, "raw_", "raw")):
            found[f"{interval}passes" if interval else "passes"] += decide(name.low, name.high, margin=MARGIN) == "pass"
            found[f"{interval}covers" if interval else "covers"] += name.low <= -MARGIN <= name.high
            widths[key].append(name.high - name.low)
    return {
        "pass_rate": found["passes"] / replications,
        "coverage": found["covers"] / replications,
        "width": float(np.mean(widths["ppi"])),
        "random_labels_pass_rate": found["srs_passes"] / replications,
        "random_labels_coverage": found["srs_covers"] / replications,
        "random_labels_width": float(np.mean(widths["srs"])),
        "raw_pass_rate": found["raw_passes"] / replications,
        "raw_coverage": found["raw_covers"] / replications,
        "raw_width": float(np.mean(widths["raw"])),
    }


def test_at_exactly_minus_the_margin_the_corrected_cell_passes_at_most_alpha_fast():
    found = simulate(300, seed=11)
    assert found["pass_rate"] <= 0.05  # nominal 0.025; 300 replications: standard error 0.009
    assert found["coverage"] >= 0.92
    assert found["raw_pass_rate"] > 0.5 and found["raw_coverage"] < 0.2  # the judge sees +0.022 where people -0.020
    assert found["width"] < found["random_labels_width"]  # the judge's verdicts, as strata, narrow it


@pytest.mark.slow
def test_at_exactly_minus_the_margin_the_corrected_cell_passes_at_most_alpha_slow():
    found = simulate(4000, seed=12)
    assert found["pass_rate"] <= 0.032  # nominal 0.025; 4,000 replications: standard error 0.0025
    assert found["coverage"] >= 0.94

"""Simulated campaigns and comparisons from known truths, vectorised, for the planner's tests.

Each replication draws what a real campaign would label (people's labels of a stratified sample of
a run whose judge has known error rates) or what a real comparison would score (per-question
differences with a known mean and spread), then computes the intervals the product computes, with
the engine's own kernels, for every replication at once:

* the miss and false-fail rates: Wilson at the design's effective size (weighted samples) or at the
  sample's count (samples that weigh themselves), as :func:`~evalcore.engine.stratified_agreement`
  and the judge report do;
* kappa: the stratified bootstrap (weighted) or the pooled one (self-weighting);
* the corrected pass rate: the bootstrap of :func:`~evalcore.engine.judge.corrected_pass_rate` on the campaign's
  own run (``labels_from_run=True``);
* a comparison: the real gate, once per distinct draw of the per-question differences.

``tests/engine/test_planning_simulation.py`` checks that these replicas agree with the real
functions on single replications, then uses them to measure coverage and power.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalcore.engine import gate, z_score
from evalcore.engine._design import SMOOTHING, effective_size, wilson_bounds
from evalcore.engine.agreement import _kappa_from_tables
from evalcore.engine.judge import rogan_gladen
from evalcore.engine.planning import JudgeAssumptions, LabelPlan

STATISTICS = ("miss_rate", "false_fail_rate", "kappa", "corrected_pass_rate")


@dataclass(frozen=True)
class Simulated:
    """Per statistic: the truth, and each replication's estimate and interval."""

    truth: dict[str, float]
    estimate: dict[str, np.ndarray]
    low: dict[str, np.ndarray]
    high: dict[str, np.ndarray]

    def coverage(self, statistic: str) -> float:
        low, high, truth = self.low[statistic], self.high[statistic], self.truth[statistic]
        return float(np.mean((low <= truth) & (truth <= high)))

    def half_width(self, statistic: str) -> float:
        return float(np.nanmean((self.high[statistic] - self.low[statistic]) / 2))


def percentile_rows(draws: np.ndarray, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Each row's percentile bounds over its finite values, at the spec's positions (as ``percentile_positions``)."""
    finite = np.isfinite(draws)
    ordered = np.sort(np.where(finite, draws, np.inf), axis=1)
    count = finite.sum(axis=1)
    alpha = (1 - confidence) / 2
    low = np.minimum(np.floor(alpha * count + 1e-9).astype(int), np.maximum(count - 1, 0))
    high = np.minimum(np.floor((1 - alpha) * count + 1e-9).astype(int), np.maximum(count - 1, 0))
    rows = np.arange(draws.shape[0])
    empty = count == 0
    return np.where(empty, np.nan, ordered[rows, low]), np.where(empty, np.nan, ordered[rows, high])


def stratum_tables(fail_pass: np.ndarray, fail_fail: np.ndarray, n_pass: int, n_fail: int) -> np.ndarray:
    """Tables (..., 2 strata, 2, 2) from the counts people failed in the judge-pass and judge-fail strata."""
    tables = np.zeros(np.shape(fail_pass) + (2, 2, 2))
    tables[..., 0, 0, 0], tables[..., 0, 1, 0] = n_pass - fail_pass, fail_pass
    tables[..., 1, 0, 1], tables[..., 1, 1, 1] = n_fail - fail_fail, fail_fail
    return tables


def simulate_campaigns(
    plan: LabelPlan,
    assumptions: JudgeAssumptions,
    *,
    replications: int,
    iterations: int,
    seed: int,
    chunk: int = 2000,
) -> Simulated:
    """Label ``replications`` campaigns designed as ``plan`` (two strata: the judge's verdicts) and compute the report's intervals.

    Replications run ``chunk`` at a time (each chunk with its own child seed), which bounds memory.
    """
    parts = [
        _simulate_chunk(
            plan, assumptions, replications=min(chunk, replications - start), iterations=iterations, rng=rng
        )
        for start, rng in zip(
            range(0, replications, chunk),
            (np.random.default_rng(child) for child in np.random.SeedSequence(seed).spawn(-(-replications // chunk))),
        )
    ]
    return Simulated(
        parts[0].truth,
        *(
            {k: np.concatenate([getattr(p, field)[k] for p in parts]) for k in STATISTICS}
            for field in ("estimate", "low", "high")
        ),
    )


def _simulate_chunk(
    plan: LabelPlan, assumptions: JudgeAssumptions, *, replications: int, iterations: int, rng: np.random.Generator
) -> Simulated:
    q = assumptions.judge_fail_share
    pi, m = assumptions.failure_share, assumptions.miss_rate
    n_pass, n_fail = plan.judge_pass_items, plan.judge_fail_items
    run = plan.population
    size = np.array([run - round(run * q), round(run * q)], dtype=float)
    weights = size / np.array([n_pass, n_fail])
    fail_rate = (pi * m / (1 - q), pi * (1 - m) / q)
    fail_pass = rng.binomial(n_pass, fail_rate[0], replications)
    fail_fail = rng.binomial(n_fail, fail_rate[1], replications)
    tables = stratum_tables(fail_pass, fail_fail, n_pass, n_fail)
    weighted_tables = np.einsum("s,rsij->rij", weights, tables)
    z = z_score(plan.confidence)
    out_est, out_low, out_high = {}, {}, {}

    # the two rates
    for name, row, col in (("miss_rate", 1, 0), ("false_fail_rate", 0, 1)):
        if plan.weighted:
            estimate = weighted_tables[:, row, col] / weighted_tables[:, row, :].sum(axis=1)
            n_eff = effective_size(tables, weights, row=row)
        else:
            pooled = tables.sum(axis=1)
            n_eff = pooled[:, row, :].sum(axis=1)
            estimate = pooled[:, row, col] / n_eff
        out_est[name] = estimate
        out_low[name], out_high[name] = wilson_bounds(estimate, n_eff, z)

    # kappa
    if plan.weighted:
        boot_pass = rng.binomial(n_pass, smooth(fail_pass[:, None], n_pass), (replications, iterations))
        boot_fail = rng.binomial(n_fail, smooth(fail_fail[:, None], n_fail), (replications, iterations))
        boot = np.einsum("s,rbsij->rbij", weights, stratum_tables(boot_pass, boot_fail, n_pass, n_fail))
        out_est["kappa"] = _kappa_from_tables(weighted_tables)[0]
    else:
        pooled = tables.sum(axis=1).reshape(replications, 4)
        total = int(pooled[0].sum())
        boot = rng.multinomial(total, pooled / total, size=(iterations, replications)).transpose(1, 0, 2)
        boot = boot.reshape(replications, iterations, 2, 2)
        out_est["kappa"] = _kappa_from_tables(pooled.reshape(-1, 2, 2))[0]
    out_low["kappa"], out_high["kappa"] = percentile_rows(_kappa_from_tables(boot)[0], plan.confidence)

    # the corrected pass rate: the run's pass count and each stratum's human passes resampled
    raw = size[0] / size.sum()
    human_pass = np.stack([n_pass - fail_pass, n_fail - fail_fail], axis=-1).astype(float)
    out_est["corrected_pass_rate"] = np.array(
        [rogan_gladen(raw, *_se_sp(weights, h, (n_pass, n_fail))) for h in human_pass]
    )
    # the campaign corrects its own run: the run's pass count is known (labels_from_run=True), each stratum's
    # resampled passes shrunk by the finite-population correction
    passes = raw
    boot_human = np.stack(
        [
            rng.binomial(n, smooth(human_pass[:, s, None], n), (replications, iterations))
            for s, n in enumerate((n_pass, n_fail))
        ],
        axis=-1,
    ).astype(float)
    shrink = np.sqrt(np.clip(1 - np.array([n_pass, n_fail]) / size, 0, 1))
    boot_human = human_pass[:, None, :] + shrink * (boot_human - human_pass[:, None, :])
    se_b, sp_b = _se_sp(weights, boot_human, (n_pass, n_fail))
    youden = se_b + sp_b - 1
    with np.errstate(invalid="ignore", divide="ignore"):
        draws = np.clip((passes + sp_b - 1) / youden, 0, 1)
    draws = np.where(youden > 0, draws, np.nan)
    out_low["corrected_pass_rate"], out_high["corrected_pass_rate"] = percentile_rows(draws, plan.confidence)

    truth = {
        "miss_rate": m,
        "false_fail_rate": assumptions.false_fail_rate,
        "kappa": assumptions.kappa,
        "corrected_pass_rate": 1 - pi,
    }
    return Simulated(truth, out_est, out_low, out_high)


def smooth(count: np.ndarray, n: int) -> np.ndarray:
    """A stratum's rate as the engine resamples it: the count smoothed by half an item either way."""
    return (count + SMOOTHING) / (n + 2 * SMOOTHING)


def _se_sp(weights: np.ndarray, human_pass: np.ndarray, sampled: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Weighted sensitivity and specificity (pass = positive) of two strata: the judge passes the first, fails the second."""
    tp = weights[0] * human_pass[..., 0]
    fp = weights[0] * (sampled[0] - human_pass[..., 0])
    fn = weights[1] * human_pass[..., 1]
    tn = weights[1] * (sampled[1] - human_pass[..., 1])
    with np.errstate(invalid="ignore", divide="ignore"):
        return tp / (tp + fn), tn / (tn + fp)


def difference_distribution(change: float, sd: float, *, step: float = 0.2) -> tuple[np.ndarray, np.ndarray]:
    """A graded metric's per-question differences: values on a grid of ``step`` in [-1, 1], about this mean and sd.

    Most questions do not change (a spike at 0), the rest spread around; the exact mean and sd of
    the returned distribution are what a test must plan with (:func:`moments`).
    """
    values = np.round(np.arange(-1, 1 + step / 2, step), 10)
    spread = np.exp(-0.5 * ((values - change) / sd) ** 2)
    probs = 0.5 * spread / spread.sum()
    probs[np.argmin(np.abs(values))] += 0.5
    return values, probs


def moments(values: np.ndarray, probs: np.ndarray) -> tuple[float, float]:
    mean = float(values @ probs)
    return mean, float(np.sqrt(((values - mean) ** 2) @ probs))


def pass_fail_distribution(change: float, discordance: float) -> tuple[np.ndarray, np.ndarray]:
    """A pass/fail metric's per-question differences: -1, 0 or +1, flipping ``discordance`` of questions in all."""
    return np.array([-1.0, 0.0, 1.0]), np.array(
        [(discordance - change) / 2, 1 - discordance, (discordance + change) / 2]
    )


def simulate_gates(
    values: np.ndarray,
    probs: np.ndarray,
    questions: int,
    *,
    margin: float,
    replications: int,
    iterations: int,
    seed: int,
    confidence: float = 0.95,
    pass_fail: bool = False,
) -> dict[str, float]:
    """Gate ``replications`` comparisons of ``questions`` paired questions: the share that pass, block and go to review.

    Each comparison draws how many questions take each per-question difference, and the real gate
    decides it (Tango's interval and McNemar's exact test for pass/fail scores, the expanded
    bootstrap and the sign-flip test otherwise), once per distinct draw.
    """
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(questions, probs, size=replications)
    status = gate_counts(
        values, counts, margin=margin, iterations=iterations, seed=seed, confidence=confidence, pass_fail=pass_fail
    )
    return {
        "pass": float(np.mean(status == "pass")),
        "block": float(np.mean(status == "block")),
        "review": float(np.mean(status == "review")),
        "counts": counts,
    }


def paired_scores(values: np.ndarray, counts: np.ndarray, *, pass_fail: bool) -> tuple[np.ndarray, np.ndarray]:
    """Baseline and candidate scores whose differences take ``values`` ``counts`` times each.

    Pass/fail differences become pairs of 0/1 scores (a fall is 1 -> 0, a rise 0 -> 1, no change 1 -> 1),
    as the gate sees them; graded ones a baseline of 0.5 plus the difference.
    """
    diffs = np.repeat(values, counts)
    if pass_fail:
        base = np.where(diffs > 0, 0.0, 1.0)
        return base, base + diffs
    return np.full(diffs.size, 0.5), 0.5 + diffs


def gate_counts(
    values: np.ndarray,
    counts: np.ndarray,
    *,
    margin: float,
    iterations: int,
    seed: int,
    confidence: float = 0.95,
    pass_fail: bool = False,
) -> np.ndarray:
    """The real gate's status for comparisons given as counts of each per-question difference (one row each)."""
    decided: dict[tuple[int, ...], str] = {}
    for row in counts:
        key = tuple(int(c) for c in row)
        if key not in decided:
            base, cand = paired_scores(values, row, pass_fail=pass_fail)
            decided[key] = gate(
                "m", base, cand, margin=margin, iterations=iterations, seed=seed, confidence=confidence
            ).status
    return np.array([decided[tuple(int(c) for c in row)] for row in counts])

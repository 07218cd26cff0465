"""The gate's error rates against a known truth, the old rule beside the new one.

The old rule (as landed before issue 19): the percentile bootstrap for every metric, pass when the
lower bound is at least ``-margin``, block when the upper bound is below 0, each (metric, slice)
alone. The new rule: Tango's score interval for pass/fail metrics and the expanded percentile
bootstrap for the rest, pass when the lower bound is above ``-margin``, block when the paired
sign-flip test survives Holm's correction over the whole report.
"""

from __future__ import annotations

import math
import time

import numpy as np

from evalcore.engine import gate, gate_frame, paired_bootstrap
from tests.engine.gate_simulation import (
    CONTINUOUS_SHAPES,
    continuous_differences,
    exact_pass_rate,
    exchangeable_runs,
    with_pass_fail_drop,
)

from ._common import Targets, print_table

MARGIN = 0.02


def _old_status(decision) -> str:
    if decision.low >= -MARGIN:
        return "pass"
    return "block" if decision.high < 0 else "review"


def _reports(reports: int, *, n: int, drop: bool, seed: int) -> dict[str, float]:
    """Share of reports that block under each rule (and, with a drop, that block on the dropped metric)."""
    rng = np.random.default_rng(seed)
    counts = {"old": 0, "uncorrected": 0, "new": 0}
    for i in range(reports):
        base, cand = exchangeable_runs(rng, n=n)
        if drop:
            cand = with_pass_fail_drop(rng, base, cand, metric="hit@1", drop=0.05)
        old = gate_frame(base, cand, slice_by="type", iterations=2000, seed=i, interval="percentile", correction="none")
        new = gate_frame(base, cand, slice_by="type", iterations=500, seed=i)
        counts["old"] += any(_old_status(d) == "block" for d in old.decisions if not math.isnan(d.low))
        counts["uncorrected"] += any(d.p_value <= 0.025 and d.low <= -MARGIN for d in new.decisions)
        counts["new"] += new.overall == "block"
    return {rule: count / reports for rule, count in counts.items()}


def _pass_at_minus_margin(n: int, discordance: float, reps: int, *, seed: int) -> tuple[float, float]:
    """Pass rates, old rule and new, of a pass/fail change of exactly -margin."""
    rng = np.random.default_rng(seed)
    old = new = 0
    for i in range(reps):
        fall, rise, _ = rng.multinomial(n, [(discordance + MARGIN) / 2, (discordance - MARGIN) / 2, 1 - discordance])
        base = np.array([1.0] * fall + [0.0] * rise + [1.0] * (n - fall - rise))
        cand = np.array([0.0] * fall + [1.0] * rise + [1.0] * (n - fall - rise))
        old += paired_bootstrap(base, cand, iterations=2000, seed=i).low >= -MARGIN
        new += gate("m", base, cand, margin=MARGIN, iterations=100).status == "pass"
    return old / reps, new / reps


def _coverage(shape: str, reps: int, *, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    covered = {"percentile": 0, "expanded": 0}
    for i in range(reps):
        base, cand = continuous_differences(rng, shape, 30)
        for interval in covered:
            result = paired_bootstrap(base, cand, iterations=2000, seed=i, interval=interval)
            covered[interval] += result.low <= 0.0 <= result.high
    return covered["percentile"] / reps, covered["expanded"] / reps


def run(targets: Targets, *, quick: bool = False) -> None:
    started = time.perf_counter()
    reports = 20 if quick else 150
    harmless = _reports(reports, n=400, drop=False, seed=1)
    dropped = _reports(max(10, reports // 5), n=2000, drop=True, seed=2)
    print_table(
        f"Reports of one gate (10 metrics x 21 slices) that block, {reports} simulated reports",
        ["truth", "old rule", "exact tests, uncorrected", "new rule (Holm)", "target"],
        [
            [
                "harmless change, 400 questions",
                f"{harmless['old']:.0%}",
                f"{harmless['uncorrected']:.0%}",
                f"{harmless['new']:.0%}",
                "<= 5 %",
            ],
            [
                "5-point drop on one metric, 2,000 questions",
                f"{dropped['old']:.0%}",
                f"{dropped['uncorrected']:.0%}",
                f"{dropped['new']:.0%}",
                ">= 80 %",
            ],
        ],
    )
    targets.check(
        harmless["new"] <= 0.05, f"gate rules: a harmless change blocks {harmless['new']:.0%} of reports (<= 5 %)"
    )
    targets.check(
        dropped["new"] >= 0.8, f"gate rules: a real 5-point drop blocks {dropped['new']:.0%} of reports (>= 80 %)"
    )

    reps = 300 if quick else 4000
    rows, worst = [], 0.0
    for n in (100, 300, 1000):
        for discordance in (0.04, 0.10):
            old, new = _pass_at_minus_margin(n, discordance, reps, seed=n + int(100 * discordance))
            exact, _ = exact_pass_rate(n, discordance, margin=MARGIN)
            worst = max(worst, exact)
            rows.append([f"{n:,}", f"{discordance:.0%}", f"{old:.1%}", f"{new:.1%}", f"{exact:.2%}"])
    print_table(
        f"A pass/fail change of exactly -margin ({MARGIN}): how often it passes ({reps:,} simulated runs each; "
        "nominal 2.5 %)",
        ["n", "questions flipping", "old rule (percentile, >=)", "new rule (Tango, >)", "new rule, exactly"],
        rows,
    )
    targets.check(
        worst <= 0.03, f"gate rules: at -margin the new rule passes at most {worst:.2%}, computed exactly (<= 3 %)"
    )

    reps = 300 if quick else 3000
    rows, lowest = [], 1.0
    for i, shape in enumerate(CONTINUOUS_SHAPES):
        percentile, expanded = _coverage(shape, reps, seed=50 + i)
        lowest = min(lowest, expanded)
        rows.append([shape, f"{percentile:.1%}", f"{expanded:.1%}"])
    print_table(
        f"Coverage of a 95 % bootstrap interval at n = 30, continuous metrics ({reps:,} runs each)",
        ["differences", "percentile (old)", "expanded percentile (new)"],
        rows,
    )
    targets.check(
        lowest >= 0.93, f"gate rules: the expanded bootstrap covers at least {lowest:.1%} at n = 30 (>= 93 %)"
    )
    print(f"(gate rules: {time.perf_counter() - started:.0f} s)")

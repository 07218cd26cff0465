"""The release gate over ten RAG metrics and twenty slices on 100,000 questions."""

from __future__ import annotations

from functools import partial

import numpy as np

from evalcore.engine import gate_frame, paired_bootstrap

from ._common import Targets, best_time, fmt_time, print_table
from .data import gate_frames

CONTINUOUS = "semantic_similarity"
LIMIT = 5.0  # seconds


def run(targets: Targets, *, quick: bool = False) -> None:
    n = 20_000 if quick else 100_000
    base, cand, slice_by, directions = gate_frames(n)
    metrics = [c for c in base.columns if c != slice_by]
    others = [m for m in metrics if m != CONTINUOUS]

    def full():
        return gate_frame(base, cand, metrics=metrics, slice_by=slice_by, higher_is_better=directions)

    def without_continuous():
        return gate_frame(base, cand, metrics=others, slice_by=slice_by, higher_is_better=directions)

    repeats = 1 if quick else 3
    total, report = best_time(full, repeats)
    rest, _ = best_time(without_continuous, repeats)

    rows = []
    for metric in metrics:
        b = base[metric].to_numpy(dtype=float)
        c = cand[metric].to_numpy(dtype=float)
        scored = np.isfinite(b) & np.isfinite(c)
        diffs = c[scored] - b[scored]
        method = paired_bootstrap(b[scored], c[scored], iterations=1).method  # what "auto" picks overall
        alone, _ = best_time(
            partial(gate_frame, base, cand, metrics=[metric], slice_by=slice_by, higher_is_better=directions), 1
        )
        decisions = [d for d in report.decisions if d.metric == metric]
        statuses = {s: sum(d.status == s for d in decisions) for s in ("pass", "review", "block")}
        rows.append(
            [
                metric,
                f"{int(scored.sum()):,}",
                f"{np.unique(diffs).size:,}",
                f"{np.mean(diffs == 0):.0%}",
                method,
                str(len(decisions)),
                "/".join(str(statuses[s]) for s in ("pass", "review", "block")),
                fmt_time(alone),
            ]
        )
    slices = base[slice_by].value_counts()
    print_table(
        f"Release gate: gate_frame on {n:,} questions, {len(metrics)} metrics x ({len(slices)} slices + overall), 10,000 resamples each",
        ["metric", "paired", "distinct diffs", "unchanged", "overall via", "decisions", "pass/review/block", "alone"],
        rows,
        [
            f"all {len(metrics)} metrics: {fmt_time(total)} for {len(report.decisions)} decisions (overall: {report.overall}); "
            f"without {CONTINUOUS}: {fmt_time(rest)}",
            f"slices: {len(slices)} question types, {slices.min():,} to {slices.max():,} questions each; "
            f"'alone' = gate_frame on that metric only; best of {repeats} for the totals.",
            "retrieval metrics from score_retrieval on generated runs (k=5; NaN for unanswerable questions);",
            "faithfulness = supported/1-8 claims; relevance a 1-5 judge score; correct and declined 0/1;",
            f"{CONTINUOUS} continuous in [0, 1], moved on every question: all its differences are distinct.",
        ],
    )
    targets.check(total < LIMIT, f"gate, 10 metrics x 20 slices on {n:,} questions: {fmt_time(total)} (target < 5 s)")
    targets.check(
        rest < LIMIT, f"gate without the continuous metric ({len(others)} metrics): {fmt_time(rest)} (target < 5 s)"
    )

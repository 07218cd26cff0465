"""The evidence behind each gate decision: one cell per (metric, slice), its interval and its test of "no drop".

Public through :mod:`evalcore.engine.release_gate`. A cell's interval depends on the metric's
kind: pass/fail metrics (every score 0 or 1 in both runs) get Tango's score interval, every other
metric the expanded percentile bootstrap. Every cell gets the same test of "no drop", the paired
sign-flip test, whose p-values the family-wise correction adjusts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

from . import bootstrap as _bootstrap
from ._interval import Interval
from .paired_proportions import tango_interval
from .paired_tests import DropTest, drop_test

#: The slice of every question.
ALL = "all"
#: Columns of a scored frame (see ``score_retrieval``) that describe a question rather than score it.
BOOKKEEPING_COLUMNS = frozenset({"k", "n_relevant", "answerable", "declined"})
GateInterval = Literal["auto", "tango", "expanded", "percentile"]
#: How a cell's interval is made: ``"auto"`` (Tango's score interval for pass/fail metrics, the
#: expanded percentile bootstrap for the rest), or one of them for every metric (``"percentile"``
#: is the spec's own rule, kept to reproduce its worked numbers).
GATE_INTERVALS: tuple[str, ...] = get_args(GateInterval)


@dataclass(frozen=True)
class Cell:
    """One (metric, slice) to decide: the paired scores of the questions scored in both runs."""

    metric: str
    slice: str
    base: np.ndarray
    cand: np.ndarray
    margin: float
    higher_is_better: bool
    pass_fail: bool

    @property
    def n(self) -> int:
        return int(self.base.size)

    @property
    def diffs(self) -> np.ndarray:
        return self.cand - self.base


@dataclass(frozen=True)
class Evidence:
    """What a cell's decision rests on: its interval (and how it was made) and its test of "no drop"."""

    interval: Interval
    interval_method: str
    iterations: int
    test: DropTest


def is_pass_fail(*scores: np.ndarray) -> bool:
    """Whether every score is 0 or 1 (a pass/fail metric: its paired differences are -1, 0 or +1)."""
    return all(bool(np.all((values == 0.0) | (values == 1.0))) for values in scores)


def check_interval(interval: object) -> str:
    if interval not in GATE_INTERVALS:
        raise ValueError(f"interval must be one of {GATE_INTERVALS}, got {interval!r}")
    return str(interval)


def interval_method(cell: Cell, interval: str) -> str:
    """The interval a cell gets: Tango's only for pass/fail scores, whatever was asked."""
    if interval == "auto":
        return "tango" if cell.pass_fail else "expanded"
    if interval == "tango" and not cell.pass_fail:
        raise ValueError(
            f"Tango's score interval is for pass/fail metrics (scores 0 or 1); {cell.metric!r} has other scores: "
            f"use interval='auto' or a bootstrap"
        )
    return interval


def sign_flips_for(family_size: int, *, alpha: float, at_least: int) -> int:
    """Random sign patterns the Monte Carlo test may draw: enough that its smallest p-value, ``1 / (draws + 1)``,
    sits well below the corrected level of a family of ``family_size`` (a tenth of ``alpha / family_size``)."""
    return max(int(at_least), math.ceil(10 * family_size / alpha))


def gather_evidence(
    cells: Sequence[Cell],
    *,
    interval: str,
    iterations: int,
    seed: int,
    confidence: float,
    sign_flips: int,
    threads: int | None,
    resampler: str = "auto",
) -> list[Evidence]:
    """Every cell's interval and test; the bootstraps of all cells share one pool of threads."""
    methods = [interval_method(cell, interval) for cell in cells]
    tests = [
        drop_test(cell.diffs, higher_is_better=cell.higher_is_better, max_draws=sign_flips, seed=seed) for cell in cells
    ]
    intervals = _intervals(
        cells, methods, iterations=iterations, seed=seed, confidence=confidence, threads=threads, resampler=resampler
    )
    return [
        Evidence(interval=found, interval_method=method, iterations=0 if method == "tango" else iterations, test=test)
        for found, method, test in zip(intervals, methods, tests)
    ]


def _intervals(
    cells: Sequence[Cell],
    methods: Sequence[str],
    *,
    iterations: int,
    seed: int,
    confidence: float,
    threads: int | None,
    resampler: str,
) -> list[Interval]:
    """Tango's interval where asked, else the bootstrap: planned together, run as one batch of jobs, then read.

    Binned bootstraps of the same size (every metric on the same slice) draw their bins' counts
    once; each still gets the numbers it would get alone.
    """
    found: list[Interval | None] = [None] * len(cells)
    planned = []
    for position, (cell, method) in enumerate(zip(cells, methods)):
        if method == "tango":
            found[position] = _tango(cell, confidence)
            continue
        diffs, plan, n_iterations, level = _bootstrap._prepare(
            cell.base,
            cell.cand,
            iterations=iterations,
            seed=seed,
            confidence=confidence,
            method=resampler,
            threads=threads,
        )
        planned.append((position, diffs, plan, n_iterations, level, method))
    _bootstrap._run_jobs(_bootstrap._jobs_of([plan for _, _, plan, *_ in planned]), threads)
    for position, diffs, plan, n_iterations, level, method in planned:
        found[position] = _bootstrap._finish(
            diffs, plan, iterations=n_iterations, seed=seed, confidence=level, interval=method
        )
    return found  # type: ignore[return-value]


def _tango(cell: Cell, confidence: float) -> Interval:
    diffs = cell.diffs
    return tango_interval(
        int(np.count_nonzero(diffs < 0)), int(np.count_nonzero(diffs > 0)), cell.n, confidence=confidence
    )

"""Timing, memory and reporting helpers shared by the benchmark sections."""

from __future__ import annotations

import gc
import math
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


def best_time(fn: Callable[[], Any], repeats: int = 3) -> tuple[float, Any]:
    """Return the best wall time of ``repeats`` calls (the least disturbed by other load) and the last result."""
    best = math.inf
    result = None
    for _ in range(max(1, repeats)):
        gc.collect()
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def side_by_side(fns: dict[str, Callable[[], Any]], repeats: int = 3) -> dict[str, float]:
    """Best time of each function, calls interleaved (a, b, a, b, ...) so that load hits all alike."""
    best = {name: math.inf for name in fns}
    for _ in range(max(1, repeats)):
        for name, fn in fns.items():
            gc.collect()
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def peak_memory(fn: Callable[[], Any]) -> tuple[int, Any]:
    """Return the peak of memory allocated during ``fn()`` above what was allocated before it.

    Measured with tracemalloc, which sees every numpy array buffer (numpy reports its allocations
    to it) and every Python object, in all threads. Not timed: tracing slows allocation down.
    """
    gc.collect()
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        result = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if started:
            tracemalloc.stop()
    return max(0, peak - before), result


def fmt_time(seconds: float) -> str:
    if seconds != seconds:  # NaN
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


def fmt_ratio(ratio: float) -> str:
    if ratio != ratio:
        return "-"
    if ratio >= 100:
        return f"{ratio:,.0f}x"
    if ratio >= 10:
        return f"{ratio:.1f}x"
    return f"{ratio:.2f}x"


def fmt_mb(nbytes: float) -> str:
    return "-" if nbytes != nbytes else f"{nbytes / 2**20:,.1f} MB"


def print_table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]], notes: Sequence[str] = ()) -> None:
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h)) for i, h in enumerate(header)]
    line = "  ".join("-" * w for w in widths)
    print()
    print(title)
    print(line)
    print("  ".join(str(h).ljust(w) if i == 0 else str(h).rjust(w) for i, (h, w) in enumerate(zip(header, widths))))
    print(line)
    for row in rows:
        print("  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
    print(line)
    for note in notes:
        print(f"  {note}")


@dataclass
class Targets:
    """PASS/MISS lines, one per target, collected for the final summary."""

    lines: list[tuple[bool, str]] = field(default_factory=list)

    def check(self, passed: bool, text: str) -> bool:
        self.lines.append((bool(passed), text))
        print(f"{'PASS' if passed else 'MISS'}  {text}")
        return bool(passed)

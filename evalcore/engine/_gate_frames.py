"""Per-question frames into gate cells: which metrics, which slices, and the paired scores of each (metric, slice).

Public through :func:`evalcore.engine.release_gate.gate_frame`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ._gate_cells import ALL, BOOKKEEPING_COLUMNS, Cell, is_pass_fail


def check_frames(base: pd.DataFrame, cand: pd.DataFrame) -> None:
    if not isinstance(base, pd.DataFrame) or not isinstance(cand, pd.DataFrame):
        raise TypeError("base and cand must be pandas DataFrames with one row per question")
    for frame, name in ((base, "base"), (cand, "cand")):
        if frame.index.has_duplicates:
            dup = frame.index[frame.index.duplicated()][0]
            raise ValueError(f"{name} has question {dup!r} more than once; one row per question")


def paired_frames(base: pd.DataFrame, cand: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """Both frames on the questions they share, and a note when either run had questions the other lacks."""
    check_frames(base, cand)
    common = base.index.intersection(cand.index, sort=False)
    if len(common) == 0:
        raise ValueError("base and cand share no question ids: a comparison must be paired")
    notes: list[str] = []
    if len(common) < max(len(base), len(cand)):
        notes.append(
            f"paired on the {len(common)} questions both runs answered ({len(base)} base, {len(cand)} candidate)"
        )
    return base.loc[common], cand.loc[common], notes


def metrics_of(b: pd.DataFrame, c: pd.DataFrame, metrics: Sequence[str] | None, slice_by: str | None) -> list[str]:
    """The metrics to gate: those asked for (each a column of both frames), or every numeric column both share."""
    if metrics is None:
        metrics = [
            col
            for col in b.columns
            if col != slice_by
            and col not in BOOKKEEPING_COLUMNS
            and col in c.columns
            and pd.api.types.is_numeric_dtype(b[col])
            and not pd.api.types.is_bool_dtype(b[col])
        ]
    else:
        missing = [m for m in metrics if m not in b.columns or m not in c.columns]
        if missing:
            raise ValueError(
                f"metric(s) {missing} are not columns of both frames; available: {sorted(set(b.columns) & set(c.columns))}"
            )
    if not metrics:
        raise ValueError("no metrics to gate: the frames share no numeric columns")
    return list(metrics)


def slices_of(b: pd.DataFrame, c: pd.DataFrame, slice_by: str | None) -> list[tuple[str, np.ndarray]]:
    """``("all", every question)`` and one ``(name, mask)`` per value of ``slice_by`` (base first, then candidate)."""
    slices: list[tuple[str, np.ndarray]] = [(ALL, np.ones(len(b), dtype=bool))]
    if slice_by is None:
        return slices
    if slice_by not in b.columns and slice_by not in c.columns:
        raise ValueError(f"slice_by column {slice_by!r} is in neither frame")
    if slice_by in b.columns and slice_by in c.columns:
        labels = b[slice_by].fillna(c[slice_by])
    else:
        labels = b[slice_by] if slice_by in b.columns else c[slice_by]
    labels = labels.astype("string").fillna("(none)")
    slices.extend((str(value), (labels == value).to_numpy()) for value in sorted(labels.unique()))
    return slices


def cells_of(
    b: pd.DataFrame,
    c: pd.DataFrame,
    metrics: Sequence[str],
    slices: Sequence[tuple[str, np.ndarray]],
    *,
    margins: Mapping[str, float],
    directions: Mapping[str, bool],
) -> list[Cell]:
    """One cell per (metric, slice) with at least one question scored in both runs, metric by metric."""
    cells = []
    for metric in metrics:
        base_values = pd.to_numeric(b[metric], errors="coerce").to_numpy(dtype=float)
        cand_values = pd.to_numeric(c[metric], errors="coerce").to_numpy(dtype=float)
        scored = np.isfinite(base_values) & np.isfinite(cand_values)
        pass_fail = is_pass_fail(base_values[scored], cand_values[scored])
        for name, mask in slices:
            use = scored & mask
            if use.any():
                cells.append(
                    Cell(
                        metric, name, base_values[use], cand_values[use], margins[metric], directions[metric], pass_fail
                    )
                )
    return cells

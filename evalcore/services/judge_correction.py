"""The gate's judge correction: a judge metric decided on the prediction-powered difference between two runs.

With ``judge_correction="ppi"`` a gate decides each (judge metric, slice) on the difference of
*people's* means between the candidate and the baseline, estimated from the judge's verdict on
every compared question plus the labels people gave the two runs' rows
(:func:`evalcore.engine.ppi_runs.prediction_powered_run_difference`), instead of the judge's raw
difference. The design is stated, not defaulted:

* **Labels**: for each run, the one answer-level campaign on the metric over that run's rows with
  the most final labels (fresh held-out samples excluded: they were drawn from the rows an earlier
  campaign left, not from the run). People's final label is 1 for the pass class, 0 for the
  failure class (binary, or an ordinal score at or below the campaign's threshold).
* **Strata**: each run's campaign's own sampling strata, slice x that run's judge verdict
  (within each the labelled rows are a simple random sample of its rows); each stratum weighted
  by its share of the compared questions. The judge's score is its verdict (1/0) by the
  campaign's rule, so within a stratum it is constant: the estimate is post-stratified on the
  judge's verdicts, and what the judge is worth is in its strata.
* **What is decided**: people's pass-rate difference on the compared questions that both
  campaigns could sample, with the margin on the same scale, the same non-inferiority rule (the
  one-sided bound above minus the margin) and its p-value in the same Holm family.

A cell with too few labels (fewer than :data:`MIN_LABELS` labelled rows of either run, or a
stratum with fewer than 2) falls back to the raw judge difference, with the reason recorded and
shown: the judge policy then applies to it as to any raw judge cell (so an unvalidated judge's
raw cell still goes to review). A corrected cell is exempt from the judge policy: people's labels
of the very rows compared correct the judge's errors, whatever its validation says (recorded beside).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from evalcore.engine import GateDecision, PredictionPowered, gate_evidence, prediction_powered_run_difference

from ..models import JudgeConfig, Run
from .judge_fitness import _REGISTRY
from .problems import UserFacingError

JUDGE_CORRECTIONS = ("none", "ppi")
#: Labelled rows each run needs in a cell before its difference is corrected (else raw, with a note).
MIN_LABELS = 10
STRATA_WORDS = "each run's campaign strata (slice × that run's judge verdict)"


@dataclass(frozen=True)
class RunLabels:
    """People's labels on one run's rows for a judge metric, and the design they were drawn with.

    ``rows`` maps every row the campaign could sample to (its stratum, the judge's verdict 1/0);
    ``labels`` maps each labelled row to people's final class (1 pass, 0 failure).
    """

    campaign: str
    rows: dict[int, tuple[str, float]]
    labels: dict[int, float]
    unlabelled: int = 0
    scale: str = ""


@dataclass(frozen=True)
class CellCorrection:
    """What the correction did for one (metric, slice): the evidence it decides on, or why it fell back."""

    metric: str
    slice: str
    result: PredictionPowered | None
    base_mean: float | None = None
    cand_mean: float | None = None
    base_labels: int = 0
    candidate_labels: int = 0
    questions: int = 0
    of_questions: int = 0
    campaigns: dict[str, str] = field(default_factory=dict)
    note: str = ""

    @property
    def corrected(self) -> bool:
        return self.result is not None

    def sentence(self, raw: Mapping[str, Any] | None = None) -> str:
        """The correction in words, as the report, the page and the CLI say it."""
        if self.result is None:
            raw_words = f" ({_interval_words(raw)})" if raw else ""
            return f"raw judge difference{raw_words}: {self.note}"
        r = self.result
        worth = (
            f"the judge worth {r.worth:.1f}× the labels" if math.isfinite(r.worth) else "every compared row labelled"
        )
        raw_words = f"; raw judge difference {_interval_words(raw)}" if raw else ""
        scope = (
            f" on {self.questions:,} of {self.of_questions:,} questions" if self.questions < self.of_questions else ""
        )
        return f"decided on the judge-corrected difference{scope}, {r.labels:,} labels, {worth}{raw_words}"

    def as_dict(self, raw: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """JSON for the decision record (and the API, the CLI and the page)."""
        out: dict[str, Any] = {
            "method": "ppi" if self.result is not None else "raw",
            "sentence": self.sentence(raw),
            "note": self.note,
            "strata": STRATA_WORDS,
            "campaigns": self.campaigns,
            "base_labels": self.base_labels,
            "candidate_labels": self.candidate_labels,
            "questions": self.questions,
            "of_questions": self.of_questions,
            "raw": dict(raw) if raw else None,
        }
        if self.result is not None:
            r = self.result
            out.update(
                labels=r.labels,
                estimator=r.method,
                worth=_finite(r.worth),
                effective_labels=_finite(r.effective_labels),
                standard_error=r.standard_error,
                judge_raw=r.judge_raw,
                labels_only={"estimate": r.labels_only.estimate, "low": r.labels_only.low, "high": r.labels_only.high},
                base_mean=self.base_mean,
                cand_mean=self.cand_mean,
            )
        return out


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None  # NaN and infinities -> None


def _interval_words(raw: Mapping[str, Any]) -> str:
    if raw.get("low") is None:
        return f"{raw['mean']:+.3f}"
    return f"{raw['mean']:+.3f} [{raw['low']:+.3f}, {raw['high']:+.3f}]"


def check_judge_correction(correction: str) -> str:
    """Refuse a judge correction the gate does not know."""
    if correction not in JUDGE_CORRECTIONS:
        raise UserFacingError(
            f"the judge correction is one of {', '.join(JUDGE_CORRECTIONS)} (ppi: decide judge metrics on the "
            f"prediction-powered difference where people labelled both runs' rows; none: the judge's raw difference), "
            f"got {correction!r}"
        )
    return correction


def run_labels(config: JudgeConfig | None, run: Run, metric: str) -> RunLabels | str:
    """People's labels on ``run``'s rows for ``metric`` from the registered sources, or why there are none."""
    if config is None:
        return "the runs carry no judge config"
    reason = f"no labelling campaign on {metric} over run {run.name!r}"
    for source in _REGISTRY.sources:
        found = getattr(source, "run_labels", None)
        if found is None:
            continue
        labels = found(config, run, metric)
        if isinstance(labels, RunLabels):
            return labels
        reason = labels or reason
    return reason


@dataclass(frozen=True)
class _Side:
    """One run's rows of a cell: their strata and verdicts, and the labelled ones."""

    strata: list[str]
    verdicts: np.ndarray
    labelled: np.ndarray  # positions of the labelled rows
    labels: np.ndarray
    questions: np.ndarray


def _side(found: RunLabels, row_ids: np.ndarray, qids: np.ndarray) -> _Side:
    strata = [found.rows[int(r)][0] for r in row_ids]
    verdicts = np.array([found.rows[int(r)][1] for r in row_ids], dtype=float)
    labelled = np.array([i for i, r in enumerate(row_ids) if int(r) in found.labels], dtype=int)
    labels = np.array([found.labels[int(row_ids[i])] for i in labelled], dtype=float)
    return _Side(strata, verdicts, labelled, labels, qids[labelled] if labelled.size else qids[:0])


def _short(side: _Side, name: str) -> str:
    """Why a run's labelled rows cannot carry the cell ("" when they can)."""
    if side.labelled.size < MIN_LABELS:
        return f"{side.labelled.size} labelled {name} rows (the correction needs at least {MIN_LABELS})"
    counts = pd.Series([side.strata[i] for i in side.labelled]).value_counts()
    for stratum in sorted(set(side.strata)):
        if counts.get(stratum, 0) < 2:
            return f"stratum {stratum!r} of the {name} run has {int(counts.get(stratum, 0))} labelled rows (needs 2)"
    return ""


def correct_cell(
    *,
    metric: str,
    slice_name: str,
    base_found: RunLabels,
    cand_found: RunLabels,
    base_rows: np.ndarray,
    cand_rows: np.ndarray,
    qids: np.ndarray,
    higher_is_better: bool,
    confidence: float,
) -> tuple[CellCorrection, Any]:
    """One cell's correction and the gate evidence it gives (None when it falls back to the raw difference)."""
    framed = np.array(
        [int(b) in base_found.rows and int(c) in cand_found.rows for b, c in zip(base_rows, cand_rows)], dtype=bool
    )
    base = _side(base_found, base_rows[framed], qids[framed])
    cand = _side(cand_found, cand_rows[framed], qids[framed])
    common = dict(
        metric=metric,
        slice=slice_name,
        base_labels=int(base.labelled.size),
        candidate_labels=int(cand.labelled.size),
        questions=int(framed.sum()),
        of_questions=int(framed.size),
        campaigns={"base": base_found.campaign, "candidate": cand_found.campaign},
    )
    short = _short(base, "baseline") or _short(cand, "candidate")
    if short:
        return CellCorrection(result=None, note=f"too few labels: {short}", **common), None
    difference, base_fit, cand_fit = prediction_powered_run_difference(
        base_labels=base.labels,
        base_judge_labelled=base.verdicts[base.labelled],
        base_judge_rows=base.verdicts,
        base_labelled_strata=[base.strata[i] for i in base.labelled],
        base_row_strata=base.strata,
        candidate_labels=cand.labels,
        candidate_judge_labelled=cand.verdicts[cand.labelled],
        candidate_judge_rows=cand.verdicts,
        candidate_labelled_strata=[cand.strata[i] for i in cand.labelled],
        candidate_row_strata=cand.strata,
        base_questions=list(base.questions),
        candidate_questions=list(cand.questions),
        confidence=confidence,
    )
    note = difference.note or ""
    if common["questions"] < common["of_questions"]:
        missing = common["of_questions"] - common["questions"]
        note = f"{missing} compared questions are outside a campaign's sample frame (not counted). {note}".strip()
    cell = CellCorrection(
        result=difference, base_mean=base_fit.estimate, cand_mean=cand_fit.estimate, note=note, **common
    )
    return cell, gate_evidence(difference, higher_is_better=higher_is_better, changed=common["questions"])


def judge_corrections(
    *,
    base: Run,
    candidate: Run,
    metrics: list[str],
    base_common: pd.DataFrame,
    cand_common: pd.DataFrame,
    slices: Mapping[str, np.ndarray],
    higher_is_better: Mapping[str, bool],
    confidence: float,
) -> tuple[dict[tuple[str, str], CellCorrection], dict[tuple[str, str], Any]]:
    """Every judge metric's cells, corrected where both runs' rows carry labels enough; and the gate evidence.

    ``base_common``/``cand_common`` are the two runs' frames on the questions both answered
    (aligned, with a ``row`` column); ``slices`` says which of them are in each slice.
    """
    corrections: dict[tuple[str, str], CellCorrection] = {}
    evidence: dict[tuple[str, str], Any] = {}
    for metric in metrics:
        found = {
            side: run_labels(base.judge_config, run, metric) for side, run in (("base", base), ("candidate", candidate))
        }
        b = base_common[metric].to_numpy(dtype=float)
        c = cand_common[metric].to_numpy(dtype=float)
        scored = ~np.isnan(b) & ~np.isnan(c)
        for slice_name, mask in slices.items():
            use = scored & mask
            if not use.any():
                continue
            missing = [f"{side}: {why}" for side, why in found.items() if isinstance(why, str)]
            if missing:
                corrections[(metric, slice_name)] = CellCorrection(
                    metric, slice_name, None, note="no labels on these runs (" + "; ".join(missing) + ")"
                )
                continue
            cell, cell_evidence = correct_cell(
                metric=metric,
                slice_name=slice_name,
                base_found=found["base"],
                cand_found=found["candidate"],
                base_rows=base_common["row"].to_numpy()[use],
                cand_rows=cand_common["row"].to_numpy()[use],
                qids=base_common.index.to_numpy()[use],
                higher_is_better=higher_is_better.get(metric, True),
                confidence=confidence,
            )
            corrections[(metric, slice_name)] = cell
            if cell_evidence is not None:
                evidence[(metric, slice_name)] = cell_evidence
    return corrections, evidence


def _raw_of(d: GateDecision) -> dict[str, Any]:
    return {
        "mean": _finite(d.mean),
        "low": _finite(d.low),
        "high": _finite(d.high),
        "status": d.status,
        "p_value": _finite(d.p_value),
        "interval_method": d.interval_method,
    }


def with_corrections(
    decisions: list[GateDecision],
    corrections: Mapping[tuple[str, str], CellCorrection],
    replaced: Sequence[GateDecision],
) -> tuple[list[GateDecision], dict[tuple[str, str], dict[str, Any]]]:
    """Each corrected cell's decision with the corrected runs' means and the correction in words; every judge
    cell's correction record (the raw judge difference beside it, or why it fell back)."""
    raw = {(d.metric, d.slice): d for d in replaced}
    out, records = [], {}
    for d in decisions:
        key = (d.metric, d.slice)
        cell = corrections.get(key)
        if cell is None:
            out.append(d)
            continue
        if cell.corrected and key in raw:
            record = cell.as_dict(_raw_of(raw[key]))
            d = replace(d, base_mean=cell.base_mean, cand_mean=cell.cand_mean)
        else:
            record = {**cell.as_dict(_raw_of(d)), "method": "raw"}
            if cell.corrected:  # too few paired questions for the gate to test the cell at all
                record["sentence"] = "raw judge difference: too few paired questions for any interval"
        records[key] = record
        out.append(replace(d, message=f"{d.message} ({record['sentence']})"))
    return out, records


def is_corrected(corrected: Mapping[tuple[str, str], dict[str, Any]], d: GateDecision) -> bool:
    return corrected.get((d.metric, d.slice), {}).get("method") == "ppi"


def labels_to_settle(decision: GateDecision) -> dict[str, Any]:
    """What settles a review decided on the judge-corrected difference: more labels, not more questions."""
    half = (decision.high - decision.low) / 2 if math.isfinite(decision.high - decision.low) else math.nan
    return {
        "sentence": f"the judge-corrected difference is {decision.mean:+.3f} ± {half:.3f}: label more of both runs' "
        "rows on this metric (the same questions on both runs where you can) to narrow it",
        "questions": None,
    }

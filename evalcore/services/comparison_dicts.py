"""A logged comparison as the JSON the API and the CLI print."""

from __future__ import annotations

from typing import Any

from ..models import Comparison


def _finite(value: float) -> float | None:
    return None if value != value else float(value)  # NaN -> None


def comparison_as_dict(comparison: Comparison) -> dict[str, Any]:
    """Every decision of a logged comparison with its interval (the JSON the API and CLI print)."""
    return {
        "id": comparison.pk,
        "base": {"id": comparison.base_id, "name": comparison.base.name},
        "candidate": {"id": comparison.candidate_id, "name": comparison.candidate.name},
        "eval_set": comparison.base.version.label,
        "overall": comparison.overall,
        "n_paired": comparison.n_paired,
        "iterations": comparison.iterations,
        "seed": comparison.seed,
        "confidence": comparison.confidence,
        "margins": comparison.margins,
        "excluded_metrics": comparison.excluded_metrics,
        "notes": comparison.notes,
        "judge_policy": comparison.judge_policy,
        "judge_correction": comparison.judge_correction,
        "correction": comparison.correction,
        "family_size": comparison.family_size,
        "judge_rates": comparison.judge_rates,
        "created_at": comparison.created_at.isoformat(),
        "changed": comparison.changed,
        "decisions": [
            {
                "metric": d.metric,
                "slice": d.slice,
                "status": d.status,
                "mean": d.mean,
                "low": d.low,
                "high": d.high,
                "base_mean": d.base_mean,
                "cand_mean": d.cand_mean,
                "margin": d.margin,
                "n": d.n,
                "confidence": d.confidence,
                "p_value": d.p_value,
                "p_adjusted": d.p_adjusted,
                "interval_method": d.interval_method,
                "test_method": d.test_method,
                "higher_is_better": d.higher_is_better,
                "message": d.message,
                "data_status": d.data_status,
                "judge": d.judge_validation,
                "to_settle": d.to_settle,
                "judge_correction": d.judge_correction,
            }
            for d in comparison.decisions.all()
        ],
    }

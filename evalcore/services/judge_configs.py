"""Judge configs: everything that can change a judge's verdicts, pinned once and shared by hash."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.db import IntegrityError, transaction

from ..models import JudgeConfig
from .fields import FieldError, as_dict, as_number, as_text, check_depth, checked_text, extra_fields
from .problems import ImportFailed, ImportProblem, ProblemCollector

JUDGE_FIELDS = {"model", "model_version", "prompt", "temperature", "claim_splitting", "library_versions"}


def normalize_judge_config(raw: dict[str, Any], display: str = "judge config") -> dict[str, Any]:
    """Validate a judge config: the model is required; everything that changes output is pinned."""
    problems = ProblemCollector(display)
    if not isinstance(raw, dict):
        raise ImportFailed(
            [
                ImportProblem(
                    display,
                    None,
                    None,
                    "a judge config is a JSON object with model, model_version, prompt, temperature, claim_splitting, library_versions",
                )
            ]
        )
    out: dict[str, Any] = {}
    try:
        check_depth(raw)
        out["model"] = as_text(raw.get("model"), "model", required=True)
        out["model_version"] = as_text(raw.get("model_version"), "model_version")
        out["prompt"] = as_text(raw.get("prompt"), "prompt")
        out["temperature"] = as_number(raw.get("temperature"), "temperature")
        out["claim_splitting"] = as_text(raw.get("claim_splitting"), "claim_splitting")
        out["library_versions"] = {
            checked_text(str(k), "library_versions"): checked_text(str(v), f"library_versions.{k}")
            for k, v in as_dict(raw.get("library_versions"), "library_versions").items()
        }
        out["extra"] = extra_fields(raw, JUDGE_FIELDS)
    except FieldError as error:
        problems.add(None, error.field or None, error.message)
    problems.raise_if_any()
    out["prompt_hash"] = hashlib.sha256(out["prompt"].encode()).hexdigest()
    out["config_hash"] = hashlib.sha256(json.dumps(out, sort_keys=True).encode()).hexdigest()
    return out


def judge_config_get_or_create(config: dict[str, Any]) -> JudgeConfig:
    """Return the stored judge config with this content (``normalize_judge_config``'s output), storing it once."""
    try:
        with transaction.atomic():
            return JudgeConfig.objects.get_or_create(config_hash=config["config_hash"], defaults=config)[0]
    except IntegrityError:
        return JudgeConfig.objects.get(config_hash=config["config_hash"])

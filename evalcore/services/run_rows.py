"""A run's rows as files give them: one row per question, validated field by field.

Plain rows carry ``id, retrieved, context_ids, context, answer, declined, claims, scores``; Ragas
result tables carry ``user_input, retrieved_contexts, response, ...`` and are matched to questions
by id or, failing that, by their text.
"""

from __future__ import annotations

import ast
import json
from typing import Any

from .fields import (
    FieldError,
    as_bool,
    as_dict,
    as_id,
    as_list,
    as_number,
    as_str_list,
    as_text,
    extra_fields,
    is_blank,
)
from .limits import limits

ROW_FIELDS = {"id", "retrieved", "context_ids", "context", "answer", "declined", "claims", "scores"}
RAGAS_FIELDS = {
    "id",
    "user_input",
    "retrieved_contexts",
    "response",
    "reference",
    "reference_contexts",
    "retrieved_context_ids",
}


def _claims(raw: Any) -> list[dict[str, Any]]:
    items = as_list(raw, "claims")
    limit = limits()
    if len(items) > limit.claims:
        raise FieldError("claims", limit.message(f"lists {len(items):,} claims", "claims"))
    claims = []
    for i, item in enumerate(items):
        where = f"claims[{i}]"
        if not isinstance(item, dict):
            raise FieldError(
                where, f"must be an object with text, supported and optionally rationale, got {item!r:.40}"
            )
        claim = {
            "text": as_text(item.get("text"), f"{where}.text", required=True),
            "supported": as_bool(item.get("supported"), f"{where}.supported"),
        }
        rationale = as_text(item.get("rationale"), f"{where}.rationale")
        if rationale:
            claim["rationale"] = rationale
        extra = extra_fields(item, ("text", "supported", "rationale"), field=where)
        if extra:
            claim["metadata"] = extra
        claims.append(claim)
    return claims


def _scores(raw: Any, field: str = "scores") -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for name, value in as_dict(raw, field).items():
        name = str(name).strip()
        if not name or len(name) > 100 or "\x00" in name:
            raise FieldError(field, f"metric names are 1 to 100 characters, got {name!r:.40}")
        out[name] = as_number(value, f"{field}.{name}")
    return out


def normalize_row(data: dict[str, Any], *, fmt: str, text_index: dict[str, str] | None = None) -> dict[str, Any]:
    """Return a validated row (question id, retrieval, context, answer, claims, imported scores)."""
    ragas = fmt == "ragas" or ("user_input" in data and "response" in data and "id" not in data)
    if ragas:
        if not is_blank(data.get("id")):
            qid = as_id(data.get("id"), "id")
        else:
            text = as_text(data.get("user_input"), "user_input", required=True).strip()
            if text_index is None or text not in text_index:
                raise FieldError("user_input", "matches no question's text in this eval set version; add an id column")
            qid = text_index[text]
            if qid == "":
                raise FieldError("user_input", "matches several questions' text; add an id column to say which")
        contexts = [
            as_text(c, "retrieved_contexts")
            for c in as_list(_python_list(data.get("retrieved_contexts")), "retrieved_contexts")
        ]
        retrieved = as_str_list(_python_list(data.get("retrieved_context_ids")), "retrieved_context_ids")
        scores = {}
        for name, value in data.items():
            if name in RAGAS_FIELDS:
                continue
            if (
                isinstance(value, (int, float))
                and not isinstance(value, bool)
                or (isinstance(value, str) and _looks_numeric(value))
            ):
                scores[str(name)] = as_number(
                    value, str(name), nan_is_null=True
                )  # Ragas writes NaN for a metric it could not compute
        return {
            "qid": qid,
            "retrieved": retrieved,
            "context_ids": retrieved[: len(contexts)] if retrieved else None,
            "context": "\n\n".join(contexts),
            "context_chunks": contexts or None,
            "answer": as_text(data.get("response"), "response"),
            "declined": False,
            "claims": [],
            "scores": scores,
            "metadata": {"format": "ragas"},
        }
    qid = as_id(data.get("id"), "id")
    retrieved = as_str_list(data.get("retrieved"), "retrieved")
    context_ids = (
        None
        if data.get("context_ids") is None
        or (isinstance(data.get("context_ids"), str) and not data["context_ids"].strip())
        else as_str_list(data.get("context_ids"), "context_ids")
    )
    raw_context = data.get("context")
    context_chunks = None
    if isinstance(raw_context, (list, tuple)) or (isinstance(raw_context, str) and raw_context.strip().startswith("[")):
        context_chunks = [as_text(c, "context") for c in as_list(raw_context, "context")]
        context = "\n\n".join(context_chunks)
    else:
        context = as_text(raw_context, "context")
    metadata = extra_fields(data, ROW_FIELDS | {k for k in data if str(k).startswith("scores.")})
    scores = _scores(data.get("scores"))
    for key, value in data.items():  # CSV and Parquet may give scores as scores.<metric> columns
        if str(key).startswith("scores."):
            scores[str(key)[7:]] = as_number(value, str(key))
    return {
        "qid": qid,
        "retrieved": retrieved,
        "context_ids": context_ids,
        "context": context,
        "context_chunks": context_chunks,
        "answer": as_text(data.get("answer"), "answer"),
        "declined": as_bool(data.get("declined"), "declined", default=False),
        "claims": _claims(data.get("claims")),
        "scores": scores,
        "metadata": metadata,
    }


def _python_list(value: Any) -> Any:
    """Read a list cell that pandas wrote as a Python literal (``['a', 'b']``), as a saved Ragas table has.

    JSON cells and anything that is not a Python list literal are returned unchanged (and
    checked as usual, so malformed cells are still reported with their line and column).
    """
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            json.loads(value)
        except json.JSONDecodeError:
            try:
                parsed = ast.literal_eval(value.strip())
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                return value
            if isinstance(parsed, list):
                return parsed
    return value


def _looks_numeric(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True

"""A run's rows as files give them: one row per question, validated field by field.

Plain rows carry ``id, retrieved, context_ids, context, answer, declined, claims, scores``; Ragas
result tables carry ``user_input, retrieved_contexts, response, ...`` and are matched to questions
by id or, failing that, by their text.
"""

from __future__ import annotations

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
from .tool_formats import ROW_ADAPTERS, TEXT_FIELD
from .tools.phoenix import refusal as phoenix_refusal

ROW_FIELDS = {"id", "retrieved", "context_ids", "context", "answer", "declined", "claims", "scores"}
RAGAS_FIELDS = {
    "id",
    "user_input",
    "retrieved_contexts",
    "response",
    "reference",
    "reference_contexts",
    "retrieved_context_ids",
    "reference_context_ids",
    "multi_responses",
    "rubrics",
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


def ragas_run_columns(data: dict[str, Any]) -> set[str]:
    """A Ragas table's columns that belong to the run, not the question: its metric scores (numbers)
    and the index pandas writes without a name (``Unnamed: 0``), which is no metric at all."""
    return {str(name) for name in data if _is_index_column(name) or _is_score(name, data[name])}


def _is_index_column(name: Any) -> bool:
    return str(name).startswith("Unnamed: ") or str(name) in ("index", "__index_level_0__")


def _is_score(name: Any, value: Any) -> bool:
    if name in RAGAS_FIELDS or _is_index_column(name):
        return False
    if isinstance(value, bool):
        return False
    if is_blank(value):
        return True  # NaN (an empty cell in CSV): a metric Ragas could not compute for this row
    return isinstance(value, (int, float)) or (isinstance(value, str) and _looks_numeric(value))


def _question_id(data: dict[str, Any], text_field: str, text: Any, text_index: dict[str, str] | None) -> str:
    """The row's question: its id when it has one, else the question whose text it repeats."""
    if not is_blank(data.get("id")):
        return as_id(data.get("id"), "id")
    text = as_text(text, text_field, required=True).strip()
    if text_index is None or text not in text_index:
        raise FieldError(text_field, "matches no question's text in this eval set version; add an id column")
    qid = text_index[text]
    if qid == "":
        raise FieldError(text_field, "matches several questions' text; add an id column to say which")
    return qid


def _ragas_row(data: dict[str, Any], text_index: dict[str, str] | None) -> dict[str, Any]:
    """A Ragas result row: the question by its text (``user_input``), its contexts, its metrics as scores."""
    qid = _question_id(data, "user_input", data.get("user_input"), text_index)
    contexts = [
        as_text(c, f"retrieved_contexts[{i}]")
        for i, c in enumerate(as_list(data.get("retrieved_contexts"), "retrieved_contexts"))
    ]
    retrieved = as_str_list(data.get("retrieved_context_ids"), "retrieved_context_ids")
    scores = {
        str(name): as_number(
            data[name], str(name), nan_is_null=True
        )  # Ragas writes NaN for a metric it could not compute
        for name in data
        if _is_score(name, data[name])
    }
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


def _adapted(data: dict[str, Any], fmt: str, text_index: dict[str, str] | None) -> dict[str, Any]:
    """A tool's record as our row fields (its question by id, else by its text); a record its adapter could not
    read is refused on its field."""
    if "_langfuse_error" in data:
        field = data["_langfuse_error"]
        raise FieldError(
            field, "is missing: a Langfuse score names its question in metadata.question_id, and has a name"
        )
    if "_phoenix_error" in data:
        raise phoenix_refusal(data["_phoenix_error"])
    if fmt not in ROW_ADAPTERS and fmt != "phoenix":
        return data
    data = ROW_ADAPTERS[fmt](data) if fmt in ROW_ADAPTERS else dict(data)
    if is_blank(data.get("id")):
        data["id"] = _question_id(data, TEXT_FIELD.get(fmt, "input"), data.get("_text"), text_index)
    data.pop("_text", None)
    return data


def _context(raw: Any) -> tuple[str, list[str] | None]:
    """The context as one text, and its chunks when it was given as a list (or a JSON list in a cell)."""
    if isinstance(raw, (list, tuple)) or (isinstance(raw, str) and raw.strip().startswith("[")):
        chunks = [as_text(c, "context") for c in as_list(raw, "context")]
        return "\n\n".join(chunks), chunks
    return as_text(raw, "context"), None


def normalize_row(data: dict[str, Any], *, fmt: str, text_index: dict[str, str] | None = None) -> dict[str, Any]:
    """Return a validated row (question id, retrieval, context, answer, claims, imported scores)."""
    if fmt == "ragas" or ("user_input" in data and "response" in data and "id" not in data):
        return _ragas_row(data, text_index)
    data = _adapted(data, fmt, text_index)
    qid = as_id(data.get("id"), "id")
    retrieved = as_str_list(data.get("retrieved"), "retrieved")
    raw_ids = data.get("context_ids")
    context_ids = (
        None
        if raw_ids is None or (isinstance(raw_ids, str) and not raw_ids.strip())
        else as_str_list(raw_ids, "context_ids")
    )
    context, context_chunks = _context(data.get("context"))
    metadata = extra_fields(data, ROW_FIELDS | {k for k in data if str(k).startswith("scores.")})
    scores = _scores(data.get("scores"))
    for key, value in data.items():  # CSV and Parquet may give scores as scores.<metric> columns
        if str(key).startswith("scores."):
            scores[str(key)[7:]] = as_number(value, str(key))
    return {
        "qid": qid,
        "chunks_are_k": fmt in CHUNKS_ARE_K,
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


def reached(row: dict[str, Any]) -> int:
    """How many chunks reached the model in a row: its context ids, else (a tool that keeps no ids, as DeepEval's
    ``retrievalContext``) its context chunks."""
    if row["context_ids"] is not None:
        return len(row["context_ids"])
    return len(row["context_chunks"] or []) if row.get("chunks_are_k") else 0


#: Formats whose rows list the chunks that reached the model without ids: k is their count.
CHUNKS_ARE_K = {
    "deepeval": "retrievalContext",
    "promptfoo": "the context variable",
    "inspect": "the sample's contexts",
    "opik": "the task output's context",
}


def k_inferred_note(fmt: str, k: int) -> str:
    """Where an inferred k came from, for the import's message."""
    field = CHUNKS_ARE_K.get(fmt)
    if field is None:
        return " (the most context_ids in a row)"
    return f" (from {field}: the most chunks a row gave the model)"


def _looks_numeric(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True

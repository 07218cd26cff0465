"""MLflow 3's ``mlflow.genai.evaluate`` result table (``result.result_df``, saved with ``to_json``) and the
evaluation data it was given (records of ``inputs`` and ``expectations``).

A result row is a trace: ``request`` (the inputs), ``response`` (the outputs), each scorer's
``NAME/value`` and ``NAME/rationale``, and ``assessments`` telling feedback (a scorer's) from
expectations (the ground truth). Retrieval comes from the trace's ``RETRIEVER`` spans (their
documents' ids, ``doc_uri`` or ``id``), as MLflow's RAG scorers read it; feedback values of
``yes``/``no`` (MLflow's categorical rating) and booleans score 1/0.
"""

from __future__ import annotations

import json
from typing import Any

from ..fields import FieldError, is_blank, json_safe, parse_json
from .common import ANSWER_KEYS, TEXT_KEYS, an_object, first, id_in, text_id, text_of, verdict_number

#: MLflow's built-in expectation names (feedback and expectations share the ``NAME/value`` columns).
EXPECTATIONS = {"expected_response", "expected_facts", "guidelines", "expected_retrieved_context"}
_TABLE_KEYS = {"trace_id", "request", "response"}


def is_result_table(names: set[str]) -> bool:
    return _TABLE_KEYS <= names and ("assessments" in names or any(n.endswith("/value") for n in names))


def is_evaluation_data(names: set[str]) -> bool:
    return {"inputs", "expectations"} <= names


def _expectations(data: dict[str, Any]) -> dict[str, Any]:
    """The row's expectations: from its assessments, else the ``NAME/value`` columns of MLflow's expectation names."""
    if "expectations" in data:
        return an_object(data["expectations"])
    found: dict[str, Any] = {}
    for assessment in _list(data.get("assessments")):
        expectation = an_object(assessment).get("expectation")
        if isinstance(expectation, dict):
            value = expectation.get("value")
            serialized = an_object(expectation.get("serialized_value"))
            if value is None and serialized.get("value") is not None:
                value = parse_json(serialized["value"], "assessments.expectation")
            found[str(assessment.get("assessment_name"))] = value
    for column in data:
        name = str(column).removesuffix("/value")
        if str(column).endswith("/value") and name in EXPECTATIONS and name not in found:
            found[name] = data[column]
    return found


def _list(value: Any) -> list[Any]:
    if isinstance(value, str) and value.strip().startswith("["):
        value = parse_json(value, "assessments")
    return value if isinstance(value, list) else []


def _gold(expectations: dict[str, Any]) -> list[dict[str, Any]] | None:
    context = expectations.get("expected_retrieved_context")
    if not isinstance(context, list):
        return None
    return [
        {"doc": str(first(an_object(c), "doc_uri", "id", "chunk_id"))}
        for c in context
        if first(an_object(c), "doc_uri", "id")
    ]


def question(data: dict[str, Any]) -> dict[str, Any]:
    """An evaluation record (or a result row) as a plain question: its inputs' question, its expectations."""
    inputs = an_object(data.get("inputs") if "inputs" in data else data.get("request"))
    text = text_of(inputs or data.get("request"), "inputs", TEXT_KEYS, required=True)
    expectations = _expectations(data)
    reference = expectations.get("expected_response")
    extra = {k: v for k, v in expectations.items() if k not in ("expected_response", "expected_retrieved_context")}
    return {
        "id": id_in(inputs, an_object(data.get("tags"))) or text_id(text),
        "question": text,
        "reference_answer": text_of(reference, "expectations.expected_response", ANSWER_KEYS) if reference else "",
        "gold": _gold(expectations),
        "metadata": json_safe({**({"expectations": extra} if extra else {})}),
    }


def _retrieved(data: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The ids and texts of the documents the trace's retriever spans returned, in their order."""
    ids: list[str] = []
    texts: list[str] = []
    for span in _list(data.get("spans")):
        attributes = an_object(an_object(span).get("attributes"))
        kind = attributes.get("mlflow.spanType")
        if (json.loads(kind) if isinstance(kind, str) and kind.startswith('"') else kind) != "RETRIEVER":
            continue
        outputs = attributes.get("mlflow.spanOutputs")
        documents = parse_json(outputs, "spans.outputs") if isinstance(outputs, str) else outputs
        for document in documents if isinstance(documents, list) else []:
            document = an_object(document)
            doc_id = first(an_object(document.get("metadata")), "chunk_id", "doc_uri") or document.get("id")
            if not is_blank(doc_id):
                ids.append(str(doc_id))
                texts.append(str(document.get("page_content") or ""))
    return ids, texts


def row(data: dict[str, Any]) -> dict[str, Any]:
    """A result row as a plain row: the response, the retriever spans' documents, each scorer's value."""
    request = an_object(data.get("request"))
    response = data.get("response")
    outputs = an_object(response)
    expectations = set(_expectations(data))
    scores: dict[str, float | None] = {}
    rationales: dict[str, str] = {}
    for column, value in data.items():
        name = str(column)
        if name.endswith("/value") and name[: -len("/value")] not in expectations | EXPECTATIONS:
            scores[name[: -len("/value")]] = verdict_number(value, name)
        elif name.endswith("/rationale") and not is_blank(value):
            rationales[name[: -len("/rationale")]] = str(value)
    ids, texts = _retrieved(data)
    if not ids and not texts and isinstance(outputs.get("contexts"), list):
        texts = [str(c) for c in outputs["contexts"]]
    try:
        text = text_of(request or data.get("request"), "request", TEXT_KEYS, required=True)
    except FieldError:
        text = None
    return {
        "id": id_in(request),
        "_text": text,
        "retrieved": ids,
        "context_ids": ids or None,
        "context": texts,
        "answer": text_of(outputs or response or "", "response", ("response", *ANSWER_KEYS)),
        "scores": scores,
        "mlflow_rationales": rationales,
        "mlflow_trace_id": data.get("trace_id"),
    }

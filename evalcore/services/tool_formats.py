"""Exports of the tools users already have, told apart by their content and mapped to our fields.

A file is recognised by the names of its fields (a CSV header, Parquet columns, the first JSON
record), not only by its extension: a file that looks like a tool's export but is read as another
format is refused with the format to use, never imported wrong (a Ragas table read as plain rows
would put every score in metadata and leave the answer empty).

Each adapter turns one of the tool's records into the record our plain formats take (see
docs/formats.md), so every rule of those formats (limits, NaN, lists, errors with line and field)
applies unchanged. Question text may stand in for an id: ``_text`` carries it for matching.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from .fields import FieldError, as_list, as_number, as_text, is_blank, json_safe
from .problems import ProblemCollector
from .records import Record
from .tools import huggingface, inspect_logs, ir_collections, mlflow, opik, phoenix, promptfoo
from .tools.common import ANSWER_KEYS as _ANSWER_KEYS
from .tools.common import TEXT_KEYS as _TEXT_KEYS
from .tools.common import first as _first
from .tools.common import text_id as text_id
from .tools.common import text_of as _text_of


@dataclass(frozen=True)
class Tool:
    format: str
    name: str
    holds: str
    #: the doors that take it: "questions" (import_evalset), "run" (import_run), "labels" (import_labels)
    doors: tuple[str, ...]
    #: what to import instead, for an export no door takes
    instead: str = ""

    @property
    def called(self) -> str:
        """The export in words, with its article: "a Ragas result table export", "an Argilla records export"."""
        article = "an" if self.name[:1].lower() in "aeiou" else "a"
        return f"{article} {self.name} export"


TOOLS: dict[str, Tool] = {
    tool.format: tool
    for tool in (
        Tool("ragas", "Ragas result table", "questions and a run's rows", ("questions", "run")),
        Tool("deepeval", "DeepEval test run or goldens", "questions and a run's rows", ("questions", "run")),
        Tool("langfuse", "Langfuse dataset items", "questions", ("questions",)),
        Tool("langfuse-scores", "Langfuse scores", "judge scores and labels", ("run", "labels")),
        Tool("langsmith", "LangSmith examples", "questions", ("questions",)),
        Tool("label-studio", "Label Studio", "labels", ("labels",)),
        Tool("argilla", "Argilla records", "labels", ("labels",)),
        Tool("promptfoo", "promptfoo results", "questions and a run's rows", ("questions", "run")),
        Tool("inspect", "Inspect AI log", "questions and a run's rows", ("questions", "run")),
        Tool("mlflow", "MLflow evaluation results", "questions and a run's rows", ("questions", "run")),
        Tool("mlflow-data", "MLflow evaluation data", "questions", ("questions",)),
        Tool("phoenix", "Phoenix span annotations", "judge scores and labels", ("run", "labels")),
        Tool("phoenix-dataset", "Phoenix dataset", "questions", ("questions",)),
        Tool("opik", "Opik experiment items or dataset items", "questions and a run's rows", ("questions", "run")),
        Tool("huggingface", "Hugging Face dataset", "questions", ("questions", "run")),
        Tool("beir", "BEIR queries", "questions", ("questions",)),
        Tool(
            "beir-corpus",
            "BEIR corpus",
            "documents, not questions",
            (),
            "import the queries and their judgments: import_evalset qrels/test.tsv --topics queries.jsonl",
        ),
        Tool("beir-qrels", "BEIR qrels", "gold judgments", ("questions",)),
        Tool("msmarco-run", "MS MARCO run", "a run's rows", ("run",)),
    )
}

DOOR_COMMANDS = {"questions": "import_evalset", "run": "import_run", "labels": "import_labels"}


def identify(keys: Iterable[str]) -> str | None:
    """The tool whose export has these field names, or None for our own formats (or an unknown one)."""
    names = {str(key) for key in keys}
    return _identify_evaluators(names) or _identify_others(names)


def _identify_evaluators(names: set[str]) -> str | None:
    """The evaluation tools of :mod:`.tools` (promptfoo, Inspect, MLflow, Phoenix, Opik, BEIR)."""
    checks = (
        (promptfoo.is_promptfoo, "promptfoo"),
        (inspect_logs.is_sample, "inspect"),
        (mlflow.is_result_table, "mlflow"),
        (mlflow.is_evaluation_data, "mlflow-data"),
        (phoenix.is_annotations, "phoenix"),
        (opik.is_experiment_item, "opik"),
        (ir_collections.is_beir_qrels, "beir-qrels"),
        (ir_collections.is_beir_corpus, "beir-corpus"),
        (ir_collections.is_beir_queries, "beir"),
    )
    return next((tool for check, tool in checks if check(names)), None)


def _identify_others(names: set[str]) -> str | None:
    if "user_input" in names and names & {"response", "retrieved_contexts", "reference"}:
        return "ragas"
    if {"dataType", "source", "name", "value"} <= names or {"traceId", "name", "value", "source"} <= names:
        return "langfuse-scores"
    if "input" in names and names & {"datasetId", "sourceTraceId", "datasetName"}:
        return "langfuse"
    if names & {"actualOutput", "metricsData", "retrievalContext"} or (
        "input" in names and names & {"expected_output", "actual_output", "retrieval_context", "expectedOutput"}
    ):
        return "deepeval"
    if {"inputs", "outputs"} <= names:
        return "langsmith"
    if {"annotations", "data"} <= names or {"annotator", "annotation_id"} <= names:
        return "label-studio"
    if ("responses" in names and names & {"fields", "status"}) or any(n.endswith(".responses.users") for n in names):
        return "argilla"
    if phoenix.is_dataset(names):
        return "phoenix-dataset"
    return None


def _contexts(value: Any, field: str, *, delimiter: str | None = None) -> list[str]:
    """A list of context texts; DeepEval's CSV joins them with ``|``."""
    if delimiter and isinstance(value, str) and not value.strip().startswith("["):
        return [part for part in value.split(delimiter) if part.strip()]
    return [as_text(c, f"{field}[{i}]") for i, c in enumerate(as_list(value, field))]


def _metadata_id(metadata: Any) -> Any:
    return metadata.get("id") or metadata.get("question_id") if isinstance(metadata, dict) else None


# ----------------------------------------------------------------------------------------------
# Questions
# ----------------------------------------------------------------------------------------------


#: The question adapters of the evaluation tools (a record of the tool's in, a plain question record out).
QUESTION_ADAPTERS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "promptfoo": promptfoo.question,
    "inspect": inspect_logs.question,
    "mlflow": mlflow.question,
    "mlflow-data": mlflow.question,
    "phoenix-dataset": phoenix.question,
    "opik": opik.question,
    "huggingface": huggingface.question,
    "beir": ir_collections.query_question,
}
#: The row adapters: a tool's record in, a plain row out (with ``_text``, the question's text, to match by).
ROW_ADAPTERS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "deepeval": lambda data: deepeval_row(data),
    "promptfoo": promptfoo.row,
    "inspect": inspect_logs.row,
    "mlflow": mlflow.row,
    "opik": opik.row,
}


#: The field a row's question text comes from, for a refusal that names it.
TEXT_FIELD = {"promptfoo": "vars.question", "mlflow": "request", "phoenix": "attributes.input.value",
              "opik": "dataset_item_data.question", "deepeval": "input"}  # fmt: skip


def tool_records(fmt: str, records: Iterable[Record], problems: ProblemCollector, *, door: str) -> Iterable[Record]:
    """A tool's records as its adapters take them: grouped by question (Langfuse and Phoenix scores, Inspect
    epochs, BEIR qrels) or checked to be one run (promptfoo)."""
    if fmt == "promptfoo":
        return promptfoo.single_run(records, problems)
    if fmt == "inspect":
        return inspect_logs.by_question(records)
    if fmt == "beir-qrels":
        return ir_collections.qrels_topics(records, problems)
    if fmt == "phoenix" and door == "run":
        return phoenix.judge_rows(records)
    if fmt == "langfuse-scores" and door == "run":
        return (Record(line, data) for line, data in langfuse_score_rows(records))
    return records


def _deepeval_question(data: dict[str, Any]) -> dict[str, Any]:
    text = as_text(data.get("input"), "input", required=True)
    metadata = _first(data, "additional_metadata", "additionalMetadata", "metadata") or {}
    contexts = _first(data, "context")
    return {
        "id": _first(data, "id") or _metadata_id(metadata) or text_id(text),
        "question": text,
        "reference_answer": _text_of(
            _first(data, "expected_output", "expectedOutput"), "expected_output", _ANSWER_KEYS
        ),
        "metadata": json_safe(
            {
                **({"context": _contexts(contexts, "context", delimiter="|")} if contexts is not None else {}),
                **(metadata if isinstance(metadata, dict) else {}),
                **{k: data[k] for k in ("comments", "source_file", "name") if not is_blank(data.get(k))},
            },
            "additional_metadata",
        ),
    }


def _langfuse_question(data: dict[str, Any]) -> dict[str, Any]:
    text = _text_of(data.get("input"), "input", _TEXT_KEYS, required=True)
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    return {
        "id": _first(data, "id") or text_id(text),
        "question": text,
        "reference_answer": _text_of(data.get("expectedOutput"), "expectedOutput", _ANSWER_KEYS),
        "type": metadata.get("type") or "",
        "gold": metadata.get("gold"),
        "metadata": json_safe(
            {
                **{k: v for k, v in metadata.items() if k not in ("type", "gold")},
                **{k: data[k] for k in ("status", "sourceTraceId", "datasetName") if not is_blank(data.get(k))},
            },
            "metadata",
        ),
    }


def _langsmith_question(data: dict[str, Any]) -> dict[str, Any]:
    text = _text_of(data.get("inputs"), "inputs", _TEXT_KEYS, required=True)
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    return {
        "id": _metadata_id(metadata) or _first(data, "id") or text_id(text),
        "question": text,
        "reference_answer": _text_of(data.get("outputs") or "", "outputs", _ANSWER_KEYS),
        "type": metadata.get("type") or "",
        "gold": metadata.get("gold"),
        "metadata": json_safe(
            {
                **{k: v for k, v in metadata.items() if k not in ("type", "gold", "id", "question_id")},
                **({"split": data["split"]} if not is_blank(data.get("split")) else {}),
            },
            "metadata",
        ),
    }


_OWN_QUESTIONS = {"deepeval": _deepeval_question, "langfuse": _langfuse_question, "langsmith": _langsmith_question}


def tool_question(data: dict[str, Any], tool: str) -> dict[str, Any]:
    """A tool's record as a plain question record (DeepEval, Langfuse, LangSmith here; the rest in :mod:`.tools`)."""
    if tool in QUESTION_ADAPTERS:
        return QUESTION_ADAPTERS[tool](data)
    if tool == "beir-qrels":
        return data  # grouped by tool_records into {"id", "gold"}, as TREC qrels are
    if tool in _OWN_QUESTIONS:
        return _OWN_QUESTIONS[tool](data)
    raise ValueError(f"no question adapter for {tool}")


# ----------------------------------------------------------------------------------------------
# A run's rows
# ----------------------------------------------------------------------------------------------


def deepeval_row(data: dict[str, Any]) -> dict[str, Any]:
    """A DeepEval test case (``test_run_*.json``'s ``testCases[]``) as a plain row, with its question text.

    Each of ``metricsData`` becomes a judge score named as DeepEval names the metric; its reason,
    threshold and verdict are kept in the row's metadata.
    """
    text = as_text(data.get("input"), "input", required=True)
    metadata = _first(data, "metadata", "additionalMetadata", "additional_metadata") or {}
    scores: dict[str, float | None] = {}
    details: dict[str, Any] = {}
    for i, metric in enumerate(as_list(_first(data, "metricsData", "metrics_data"), "metricsData")):
        where = f"metricsData[{i}]"
        if not isinstance(metric, dict):
            raise FieldError(where, "must be an object with name and score")
        name = as_text(metric.get("name"), f"{where}.name", required=True).strip()
        scores[name] = as_number(metric.get("score"), f"{where}.score")
        details[name] = {
            k: metric.get(k) for k in ("threshold", "success", "reason", "evaluationModel", "error") if k in metric
        }
    row = {
        "id": _metadata_id(metadata),
        "_text": text,
        "context": _contexts(_first(data, "retrievalContext", "retrieval_context") or [], "retrievalContext"),
        "answer": _text_of(_first(data, "actualOutput", "actual_output") or "", "actualOutput", _ANSWER_KEYS),
        "scores": scores,
        "deepeval_metrics": details,
    }
    for key in ("name", "success", "order", "runDuration", "evaluationCost"):
        if key in data and not is_blank(data[key]):
            row[f"deepeval_{key}"] = data[key]
    return row


def langfuse_score_rows(records: Iterable[Any]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Langfuse scores (one a line) grouped into one row a question: its ``EVAL`` and ``API`` scores (a judge's
    or a program's) become the row's judge scores; ``ANNOTATION`` scores are people's labels, read by
    import_labels, and are left out here. The question is named in the score's metadata (``question_id``)."""
    rows: dict[str, dict[str, Any]] = {}
    for record in records:
        data = record.data
        if str(data.get("source") or "").upper() == "ANNOTATION":
            continue
        metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
        qid = _metadata_id(metadata)
        name = str(data.get("name") or "").strip()
        if is_blank(qid) or not name:
            yield record.line, {"_langfuse_error": "metadata.question_id" if name else "name"}
            continue
        row = rows.setdefault(str(qid), {"line": record.line, "scores": {}, "traces": []})
        kind = str(data.get("dataType") or "NUMERIC").upper()
        value = data.get("value") if kind != "CATEGORICAL" else None
        row["scores"][name] = value
        if kind == "CATEGORICAL":
            row.setdefault("labels", {})[name] = data.get("stringValue")
        if data.get("traceId") and data["traceId"] not in row["traces"]:
            row["traces"].append(data["traceId"])
    for qid, row in rows.items():
        labels = {"langfuse_labels": row["labels"]} if "labels" in row else {}
        yield row["line"], {"id": qid, "scores": row["scores"], "langfuse_traces": row["traces"], **labels}

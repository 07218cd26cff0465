"""Import runs: one row per question, scored on the way in, atomic and idempotent.

The rows file streams twice: once to validate every row (no writes), once inside a single
transaction to score and write them in batches. Memory holds the eval set's question index and
one batch of rows, never the whole file. Re-importing the same file under the same name
creates nothing and says so; the same name with different content is refused.
"""

from __future__ import annotations

import ast
import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from django.db import IntegrityError, transaction

from evalcore.engine import ChunkMap

from ..models import EvalSetVersion, JudgeConfig, Question, Row, Run, RunChunk
from .fields import (
    FieldError,
    as_bool,
    as_dict,
    as_id,
    as_int,
    as_list,
    as_number,
    as_str_list,
    as_text,
    is_blank,
    json_safe,
)
from .problems import ImportFailed, ImportProblem, ProblemCollector
from .readers import Record, count_records, detect_format, read_records, read_trec_run
from .scoring import QuestionInfo, score_rows
from .summaries import order_metrics, slice_name, summarize_scores

Progress = Callable[[int, int | None, str], None]
ROW_FIELDS = {"id", "retrieved", "context_ids", "context", "answer", "declined", "claims", "scores"}
RAGAS_FIELDS = {"id", "user_input", "retrieved_contexts", "response", "reference", "reference_contexts", "retrieved_context_ids"}
BATCH = 2000


@dataclass(frozen=True)
class RunImportResult:
    run: Run
    created: bool
    message: str


def _noop(done: int, total: int | None, message: str) -> None:
    return None


def resolve_version(ref: str, *, display: str = "") -> EvalSetVersion:
    """Return the version named ``name`` (its latest) or ``name@N``."""
    name, _, number = ref.partition("@")
    qs = EvalSetVersion.objects.select_related("eval_set").filter(eval_set__name=name)
    if number:
        if not number.isdigit():
            raise ImportFailed([ImportProblem(display or ref, None, None, f"eval set reference {ref!r} must be NAME or NAME@VERSION")])
        version = qs.filter(number=int(number)).first()
    else:
        version = qs.order_by("-number").first()
    if version is None:
        raise ImportFailed([ImportProblem(display or ref, None, None, f"there is no eval set {ref!r}; import the questions first (import_evalset)")])
    return version


# ----------------------------------------------------------------------------------------------
# Judge config and chunk map
# ----------------------------------------------------------------------------------------------

JUDGE_FIELDS = {"model", "model_version", "prompt", "temperature", "claim_splitting", "library_versions"}


def normalize_judge_config(raw: dict[str, Any], display: str = "judge config") -> dict[str, Any]:
    """Validate a judge config: the model is required; everything that changes output is pinned."""
    problems = ProblemCollector(display)
    if not isinstance(raw, dict):
        raise ImportFailed([ImportProblem(display, None, None, "a judge config is a JSON object with model, model_version, prompt, temperature, claim_splitting, library_versions")])
    out: dict[str, Any] = {}
    try:
        out["model"] = as_text(raw.get("model"), "model", required=True)
        out["model_version"] = as_text(raw.get("model_version"), "model_version")
        out["prompt"] = as_text(raw.get("prompt"), "prompt")
        out["temperature"] = as_number(raw.get("temperature"), "temperature")
        out["claim_splitting"] = as_text(raw.get("claim_splitting"), "claim_splitting")
        out["library_versions"] = {str(k): str(v) for k, v in as_dict(raw.get("library_versions"), "library_versions").items()}
    except FieldError as error:
        problems.add(None, error.field, error.message)
    problems.raise_if_any()
    out["extra"] = {k: json_safe(v) for k, v in raw.items() if k not in JUDGE_FIELDS}
    out["prompt_hash"] = hashlib.sha256(out["prompt"].encode()).hexdigest()
    out["config_hash"] = hashlib.sha256(json.dumps(out, sort_keys=True).encode()).hexdigest()
    return out


def judge_config_get_or_create(config: dict[str, Any]) -> JudgeConfig:
    try:
        with transaction.atomic():
            return JudgeConfig.objects.get_or_create(config_hash=config["config_hash"], defaults=config)[0]
    except IntegrityError:
        return JudgeConfig.objects.get(config_hash=config["config_hash"])


def read_chunk_map(path: Path, display: str | None = None) -> tuple[ChunkMap, list[dict[str, Any]]]:
    """Read a chunk map file (rows of id, doc, start, end) with line-numbered errors."""
    display = display or path.name
    fmt = detect_format(path)
    problems = ProblemCollector(display)
    chunks: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for record in read_records(path, fmt, display):
        data = record.data
        try:
            chunk_id = as_id(data.get("id", data.get("chunk_id")), "id")
            doc = as_id(data.get("doc"), "doc")
            start = as_int(data.get("start"), "start")
            end = as_int(data.get("end"), "end")
            if not 0 <= start < end:
                raise FieldError("end", f"need 0 <= start < end, got start={start}, end={end}")
        except FieldError as error:
            problems.add(record.line, error.field, error.message)
            continue
        if chunk_id in seen:
            problems.add(record.line, "id", f"chunk {chunk_id!r} appears twice (first on line {seen[chunk_id]})")
            continue
        seen[chunk_id] = record.line
        chunks.append({"chunk_id": chunk_id, "doc": doc, "start": start, "end": end})
    problems.raise_if_any()
    if not chunks:
        raise ImportFailed([ImportProblem(display, None, None, "the chunk map is empty")])
    return ChunkMap(chunks), chunks


# ----------------------------------------------------------------------------------------------
# Rows
# ----------------------------------------------------------------------------------------------


def _claims(raw: Any) -> list[dict[str, Any]]:
    claims = []
    for i, item in enumerate(as_list(raw, "claims")):
        where = f"claims[{i}]"
        if not isinstance(item, dict):
            raise FieldError(where, f"must be an object with text, supported and optionally rationale, got {item!r:.40}")
        claim = {
            "text": as_text(item.get("text"), f"{where}.text", required=True),
            "supported": as_bool(item.get("supported"), f"{where}.supported"),
        }
        rationale = as_text(item.get("rationale"), f"{where}.rationale")
        if rationale:
            claim["rationale"] = rationale
        extra = {k: json_safe(v) for k, v in item.items() if k not in ("text", "supported", "rationale")}
        if extra:
            claim["metadata"] = extra
        claims.append(claim)
    return claims


def _scores(raw: Any, field: str = "scores") -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for name, value in as_dict(raw, field).items():
        name = str(name).strip()
        if not name or len(name) > 100:
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
        contexts = [as_text(c, "retrieved_contexts") for c in as_list(_python_list(data.get("retrieved_contexts")), "retrieved_contexts")]
        retrieved = as_str_list(_python_list(data.get("retrieved_context_ids")), "retrieved_context_ids")
        scores = {}
        for name, value in data.items():
            if name in RAGAS_FIELDS:
                continue
            if isinstance(value, (int, float)) and not isinstance(value, bool) or (isinstance(value, str) and _looks_numeric(value)):
                scores[str(name)] = as_number(value, str(name))
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
    context_ids = None if data.get("context_ids") is None or (isinstance(data.get("context_ids"), str) and not data["context_ids"].strip()) else as_str_list(data.get("context_ids"), "context_ids")
    raw_context = data.get("context")
    context_chunks = None
    if isinstance(raw_context, (list, tuple)) or (isinstance(raw_context, str) and raw_context.strip().startswith("[")):
        context_chunks = [as_text(c, "context") for c in as_list(raw_context, "context")]
        context = "\n\n".join(context_chunks)
    else:
        context = as_text(raw_context, "context")
    metadata = {k: json_safe(v) for k, v in data.items() if k not in ROW_FIELDS and not str(k).startswith("scores.")}
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


def _records(path: Path, fmt: str, display: str) -> Iterator[Record]:
    if fmt == "trec-run":
        return read_trec_run(path, display)
    if fmt == "trec-qrels":
        raise ImportFailed([ImportProblem(display, None, None, "a qrels file holds gold judgments, not a run's rows; import it with import_evalset")])
    return read_records(path, fmt, display)


@dataclass
class _Index:
    """The eval set version's questions, by question id (and by text, for Ragas tables)."""

    by_qid: dict[str, QuestionInfo]
    by_text: dict[str, str]
    per_slice: dict[str, int]

    @classmethod
    def load(cls, version: EvalSetVersion) -> _Index:
        by_qid: dict[str, QuestionInfo] = {}
        by_text: dict[str, str] = {}
        per_slice: dict[str, int] = {}
        values = Question.objects.filter(version=version).values_list("pk", "qid", "qtype", "answerable", "gold", "text")
        for pk, qid, qtype, answerable, gold, text in values.iterator(chunk_size=5000):
            by_qid[qid] = QuestionInfo(pk, qid, qtype, answerable, gold)
            key = text.strip()
            by_text[key] = "" if key in by_text else qid
            per_slice[slice_name(qtype)] = per_slice.get(slice_name(qtype), 0) + 1
        return cls(by_qid, by_text, per_slice)


def _validated_rows(
    path: Path, fmt: str, display: str, index: _Index, version: EvalSetVersion, chunk_map: ChunkMap | None,
    k: int | None, problems: ProblemCollector,
) -> Iterator[tuple[int, dict[str, Any]]]:
    seen: dict[str, int] = {}
    for record in _records(path, fmt, display):
        if problems.full:
            problems.truncated = True
            return
        try:
            row = normalize_row(record.data, fmt=fmt, text_index=index.by_text)
        except FieldError as error:
            problems.add(record.line, error.field, error.message)
            continue
        qid = row["qid"]
        if qid not in index.by_qid:
            problems.add(record.line, "id", f"question {qid!r} is not in {version.label}; rows must answer the version's questions")
            continue
        if qid in seen:
            problems.add(record.line, "id", f"question {qid!r} has a second row (first on line {seen[qid]}); one row per question")
            continue
        seen[qid] = record.line
        if chunk_map is not None:
            unknown = next((c for c in row["retrieved"] + (row["context_ids"] or []) if c not in chunk_map), None)
            if unknown is not None:
                field = "retrieved" if unknown in row["retrieved"] else "context_ids"
                problems.add(record.line, field, f"chunk {unknown!r} is not in the chunk map; upload the chunk map this run retrieved from")
                continue
        if k is not None and row["context_ids"] is not None and len(row["context_ids"]) > k:
            problems.add(
                record.line, "context_ids",
                f"{len(row['context_ids'])} chunks reached the model but the run's k is {k}; k must be the number of chunks that reach the model (raise --k)",
            )
            continue
        yield record.line, row


def _file_hash(path: Path | None) -> str:
    if path is None:
        return ""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def run_import(
    *,
    path: Path,
    evalset: str,
    name: str,
    fmt: str | None = None,
    display_name: str | None = None,
    k: int | None = None,
    gain: str = "exponential",
    judge_config: dict[str, Any] | None = None,
    system_config: dict[str, Any] | None = None,
    chunks_path: Path | None = None,
    description: str = "",
    user: Any = None,
    progress: Progress = _noop,
) -> RunImportResult:
    """Import a run's rows against an eval set version (``NAME`` for its latest or ``NAME@N``)."""
    display = display_name or path.name
    fmt = detect_format(path, fmt)
    from django.core.exceptions import ValidationError
    from django.core.validators import validate_slug

    try:
        validate_slug(name)
    except ValidationError:
        raise ImportFailed([ImportProblem(display, None, None, f"run name {name!r} may use only letters, digits, - and _")]) from None
    if gain not in ("exponential", "linear"):
        raise ImportFailed([ImportProblem(display, None, None, f"gain must be 'exponential' or 'linear', got {gain!r}")])
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ImportFailed([ImportProblem(display, None, None, f"k must be a positive integer (chunks that reach the model), got {k!r}")])
    version = resolve_version(evalset, display=display)
    judge = normalize_judge_config(judge_config) if judge_config else None
    system = json_safe(system_config or {})
    if not isinstance(system, dict):
        raise ImportFailed([ImportProblem(display, None, None, "the system config must be a JSON object")])
    chunk_map, chunk_rows = read_chunk_map(chunks_path) if chunks_path else (None, [])

    options = {
        "version": version.pk, "format": fmt, "k": k, "gain": gain, "judge": judge and judge["config_hash"],
        "system": system, "chunks": _file_hash(chunks_path),
    }
    source_hash = hashlib.sha256((_file_hash(path) + json.dumps(options, sort_keys=True)).encode()).hexdigest()
    existing = Run.objects.filter(version=version, name=name).first()
    if existing is not None:
        if existing.source_hash == source_hash:
            return RunImportResult(existing, False, f"Nothing new: run {name!r} on {version.label} was already imported from this file ({existing.row_count} rows).")
        raise ImportFailed([ImportProblem(display, None, None, f"a run named {name!r} already exists on {version.label} with different content; choose another name")])

    index = _Index.load(version)
    total = count_records(path, fmt) if fmt != "trec-run" else None
    problems = ProblemCollector(display)
    count = 0
    widest = 0
    for _, row in _validated_rows(path, fmt, display, index, version, chunk_map, k, problems):
        count += 1
        if row["context_ids"] is not None:
            widest = max(widest, len(row["context_ids"]))
        if count % 1000 == 0:
            progress(count, total and 2 * total, "validating")
    problems.raise_if_any()
    if count == 0:
        raise ImportFailed([ImportProblem(display, None, None, "the file holds no rows")])
    if k is None:
        if widest == 0:
            raise ImportFailed([ImportProblem(display, None, None, "give k, the number of chunks that reach the model (--k): the rows have no context_ids to infer it from")])
        k = widest

    try:
        with transaction.atomic():
            run = Run.objects.create(
                version=version, name=name, description=description, system_config=system,
                judge_config=judge_config_get_or_create(judge) if judge else None,
                k=k, gain=gain, has_chunk_map=chunk_map is not None, source_name=display, source_hash=source_hash,
                question_count=version.question_count, created_by=user,
            )
            for start in range(0, len(chunk_rows), 5000):
                RunChunk.objects.bulk_create([RunChunk(run=run, **c) for c in chunk_rows[start : start + 5000]])
            summary_rows: list[tuple[str, dict[str, float | None]]] = []
            batch: list[dict[str, Any]] = []
            written = 0
            second = ProblemCollector(display)

            def flush() -> None:
                nonlocal written
                infos = [index.by_qid[row["qid"]] for row in batch]
                computed = score_rows(batch, infos, k=k, gain=gain, chunk_map=chunk_map)
                objects = []
                for row, info, scores in zip(batch, infos, computed):
                    merged, metadata = _merge_scores(row, scores)
                    objects.append(Row(
                        run=run, question_id=info.pk, retrieved=row["retrieved"], context_ids=row["context_ids"] or [],
                        context=row["context"], answer=row["answer"], declined=row["declined"], claims=row["claims"],
                        scores=merged, metadata=metadata,
                    ))
                    summary_rows.append((slice_name(info.qtype), merged))
                Row.objects.bulk_create(objects)
                written += len(objects)
                progress(count + written, 2 * count, "scoring and writing")
                batch.clear()

            for _, row in _validated_rows(path, fmt, display, index, version, chunk_map, k, second):
                batch.append(row)
                if len(batch) >= BATCH:
                    flush()
            if batch:
                flush()
            second.raise_if_any()
            run.row_count = written
            run.summary = build_summary(summary_rows, k=k, questions_per_slice=index.per_slice)
            run.save(update_fields=["row_count", "summary"])
    except IntegrityError:
        existing = Run.objects.filter(version=version, name=name).first()
        if existing is not None and existing.source_hash == source_hash:
            return RunImportResult(existing, False, f"Nothing new: run {name!r} was imported concurrently from this file.")
        raise
    coverage = f"{written} of {version.question_count} questions" + (" (partial run: means cover only these)" if written < version.question_count else "")
    return RunImportResult(run, True, f"Created run {name!r} on {version.label}: {coverage}, k={k}.")


def _merge_scores(row: dict[str, Any], computed: dict[str, float | None]) -> tuple[dict[str, float | None], dict[str, Any]]:
    """Merge computed and imported scores; computed retrieval metrics and claim-level faithfulness win."""
    metadata = dict(row["metadata"])
    if row.get("context_chunks"):
        metadata["context_chunks"] = row["context_chunks"]
    merged = dict(row["scores"])
    overridden = {}
    for name, value in computed.items():
        if name == "faithfulness" and value is None and merged.get("faithfulness") is not None and not row["claims"] and not row["declined"]:
            continue  # a judge score imported without its claims is kept as imported
        if name in merged and merged[name] != value:
            overridden[name] = merged[name]
        merged[name] = value
    if overridden:
        metadata["imported_scores"] = overridden
    return merged, metadata


def build_summary(rows: list[tuple[str, dict[str, float | None]]], *, k: int, questions_per_slice: dict[str, int]) -> dict[str, Any]:
    names: set[str] = set()
    for _, scores in rows:
        names.update(scores)
    metrics = order_metrics(names, k)
    frame = pd.DataFrame([scores for _, scores in rows], columns=metrics, dtype=float)
    frame["slice"] = [s for s, _ in rows]
    return summarize_scores(frame, metrics=metrics, questions_per_slice=questions_per_slice)


def run_rows_frame(run: Run, *, metrics: list[str] | None = None) -> pd.DataFrame:
    """Return a run's per-question scores: index question id, a ``type`` column, one column per metric."""
    records = Row.objects.filter(run=run).values_list("question__qid", "question__qtype", "scores")
    qids, types, scores = [], [], []
    for qid, qtype, row_scores in records.iterator(chunk_size=5000):
        qids.append(qid)
        types.append(slice_name(qtype))
        scores.append(row_scores)
    frame = pd.DataFrame(scores, index=pd.Index(qids, name="question"))
    frame = frame.apply(pd.to_numeric, errors="coerce") if len(frame.columns) else frame
    if metrics is not None:
        frame = frame.reindex(columns=metrics)
    frame.insert(0, "type", types)
    return frame.astype({c: float for c in frame.columns if c != "type"})

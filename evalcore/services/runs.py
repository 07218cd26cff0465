"""Import runs: one row per question, scored on the way in, atomic and idempotent.

The rows file streams twice: once to validate every row (no writes), once inside a single
transaction to score and write them in batches (see :mod:`.importing`). Memory holds the eval
set's question index and one batch of rows, never the whole file. Re-importing the same file
under the same name creates nothing and says so; the same name with different content is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from evalcore.engine import ChunkMap

from ..models import EvalSetVersion, Question, Row, Run, RunChunk
from .fields import FieldError
from .importing import (
    Progress,
    create_once,
    in_batches,
    insert_values,
    no_progress,
    refresh_statistics,
    validated,
)
from .judge_configs import judge_config_get_or_create
from .problems import ImportFailed, ImportProblem, ProblemCollector
from .readers import Record, count_records
from .run_options import (
    DEFAULT_TREC,
    RANKED_RUNS,
    RunImportPlan,
    RunOptions,
    TrecOptions,
    inferred_k,
    run_import_plan,
)
from .run_rows import normalize_row, reached
from .score_tables import score_table_write
from .scoring import QuestionInfo, score_rows
from .summaries import order_metrics, slice_name, summarize_scores
from .tool_formats import tool_records
from .trec import read_import

BATCH = 2000
#: The columns :func:`store_rows` writes, in the order of its value tuples.
ROW_FIELDS = (
    "run",
    "question",
    "retrieved",
    "context_ids",
    "context",
    "answer",
    "declined",
    "claims",
    "scores",
    "metadata",
)


@dataclass(frozen=True)
class RunImportResult:
    run: Run
    created: bool
    message: str


@dataclass
class QuestionIndex:
    """The eval set version's questions, by question id (and by text, for Ragas tables)."""

    by_qid: dict[str, QuestionInfo]
    by_text: dict[str, str]
    per_slice: dict[str, int]

    @classmethod
    def load(cls, version: EvalSetVersion) -> QuestionIndex:
        by_qid: dict[str, QuestionInfo] = {}
        by_text: dict[str, str] = {}
        per_slice: dict[str, int] = {}
        values = Question.objects.filter(version=version).values_list(
            "pk", "qid", "qtype", "answerable", "gold", "text"
        )
        for pk, qid, qtype, answerable, gold, text in values.iterator(chunk_size=5000):
            by_qid[qid] = QuestionInfo(pk, qid, qtype, answerable, gold)
            key = text.strip()
            by_text[key] = "" if key in by_text else qid
            per_slice[slice_name(qtype)] = per_slice.get(slice_name(qtype), 0) + 1
        return cls(by_qid, by_text, per_slice)


def _row_checker(
    index: QuestionIndex, version: EvalSetVersion, fmt: str, chunk_map: ChunkMap | None, k: int | None
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Return the function that validates one record as a row of a run on ``version``."""

    def check(data: dict[str, Any]) -> dict[str, Any]:
        row = normalize_row(data, fmt=fmt, text_index=index.by_text)
        if row["qid"] not in index.by_qid:
            raise FieldError(
                "id", f"question {row['qid']!r} is not in {version.label}; rows must answer the version's questions"
            )
        if chunk_map is not None:
            unknown = next((c for c in row["retrieved"] + (row["context_ids"] or []) if c not in chunk_map), None)
            if unknown is not None:
                field = "retrieved" if unknown in row["retrieved"] else "context_ids"
                raise FieldError(
                    field, f"chunk {unknown!r} is not in the chunk map; upload the chunk map this run retrieved from"
                )
        if k is not None and row["context_ids"] is not None and len(row["context_ids"]) > k:
            raise FieldError(
                "context_ids",
                f"{len(row['context_ids'])} chunks reached the model but the run's k is {k}; k must be the number of chunks "
                f"that reach the model (raise --k)",
            )
        return row

    return check


def _validated_rows(
    path: Path,
    fmt: str,
    display: str,
    index: QuestionIndex,
    version: EvalSetVersion,
    chunk_map: ChunkMap | None,
    k: int | None,
    problems: ProblemCollector,
    trec: TrecOptions = DEFAULT_TREC,
    skipped: list[str] | None = None,
) -> Iterator[tuple[int, dict[str, Any]]]:
    records = read_import(
        path, fmt, display, trec="trec-run", holding="a run's rows", problems=problems, ties=trec.ties
    )
    records = tool_records(fmt, records, problems, door="run")
    if fmt in RANKED_RUNS and trec.skip_missing:
        records = _known_topics(records, index, skipped if skipped is not None else [])
    return validated(
        records,
        _row_checker(index, version, fmt, chunk_map, k),
        problems,
        key=lambda row: row["qid"],
        duplicate=lambda qid, first: f"question {qid!r} has a second row (first on line {first}); one row per question",
    )


def _known_topics(records: Iterable[Record], index: QuestionIndex, skipped: list[str]) -> Iterator[Record]:
    """The run's topics that the eval set holds; the others are listed in ``skipped`` (trec_eval ignores them)."""
    for record in records:
        if str(record.data.get("id")) in index.by_qid:
            yield record
        else:
            skipped.append(str(record.data.get("id")))


def _created_message(
    run: Run,
    *,
    name: str,
    version: EvalSetVersion,
    cutoffs: list[int],
    k_note: str,
    skipped: list[str],
    options: RunOptions,
) -> str:
    written = run.row_count
    coverage = f"{written} of {version.question_count} questions" + (
        " (partial run: means cover only these)" if written < version.question_count else ""
    )
    skip_note = (
        f" Skipped {len(skipped)} run topic(s) not in {version.label} (as trec_eval does): "
        f"{', '.join(skipped[:10])}{', ...' if len(skipped) > 10 else ''}."
        if skipped
        else ""
    )
    at = f"cut-offs {', '.join(map(str, cutoffs))}" if cutoffs else f"k={run.k}"
    gain = f", {options.gain} gain" if options.trec else ""
    return (
        f"Created run {name!r} on {version.label}: {coverage}, {at}{k_note}{gain}.{gold_note(run.summary)}"
        f"{skip_note}{options.gain_note}"
    )


def run_import(
    *,
    path: Path,
    evalset: str,
    name: str,
    fmt: str | None = None,
    display_name: str | None = None,
    k: int | None = None,
    cutoffs: list[int] | None = None,
    gain: str | None = None,
    ties: str = "docno-desc",
    missing_topics: str = "skip",
    judge_config: dict[str, Any] | None = None,
    system_config: dict[str, Any] | None = None,
    chunks_path: Path | None = None,
    description: str = "",
    user: Any = None,
    progress: Progress = no_progress,
) -> RunImportResult:
    """Import a run's rows against an eval set version (``NAME`` for its latest or ``NAME@N``).

    ``cutoffs`` adds retrieval metrics at further cut-offs (``rr@c`` among them). TREC runs: the
    gain defaults to linear (trec_eval's), ``ties`` orders equal scores, and with
    ``missing_topics="skip"`` a run topic the eval set lacks is skipped and counted as trec_eval
    skips it (``"fail"`` refuses the file instead).
    """
    plan = run_import_plan(
        path=path,
        evalset=evalset,
        name=name,
        fmt=fmt,
        display_name=display_name,
        k=k,
        cutoffs=cutoffs,
        gain=gain,
        ties=ties,
        missing_topics=missing_topics,
        judge_config=judge_config,
        system_config=system_config,
        chunks_path=chunks_path,
        description=description,
    )
    name, version, display, source_hash = plan.name, plan.version, plan.display, plan.source_hash

    def name_taken() -> ImportFailed:
        message = f"a run named {name!r} already exists on {version.label} with different content; choose another name"
        return ImportFailed([ImportProblem(display, None, None, message)])

    existing = Run.objects.filter(version=version, name=name).first()
    if existing is not None:
        if existing.source_hash == source_hash:
            return RunImportResult(
                existing,
                False,
                f"Nothing new: run {name!r} on {version.label} was already imported from this file ({existing.row_count} rows).",
            )
        raise name_taken()

    checked = run_import_check(plan, progress=progress)
    run, created = create_once(
        lambda: run_import_write(plan, checked, user=user, progress=progress),
        existing=lambda: Run.objects.filter(version=version, name=name, source_hash=source_hash).first(),
        taken=lambda: name_taken() if Run.objects.filter(version=version, name=name).exists() else None,
    )
    if not created:
        return RunImportResult(run, False, f"Nothing new: run {name!r} was imported concurrently from this file.")
    refresh_statistics(Row)
    return RunImportResult(
        run,
        True,
        _created_message(
            run,
            name=name,
            version=version,
            cutoffs=plan.options.cutoffs,
            k_note=checked.k_note,
            skipped=checked.skipped,
            options=plan.options,
        ),
    )


@dataclass(frozen=True)
class CheckedRows:
    """What the check step found: the run's k (given, or the widest context the rows hold, with its note), the
    rows counted, and the book of problems the write step adds to (given k, the file is checked as it is
    written: see :func:`run_import_check`)."""

    k: int
    k_note: str
    count: int
    single_pass: bool
    total: int | None
    index: QuestionIndex
    problems: ProblemCollector
    skipped: list[str]


def run_import_check(plan: RunImportPlan, *, progress: Progress = no_progress) -> CheckedRows:
    """Check the rows file against the plan without writing: without k, a first pass validates every row and finds
    k (the widest context); given k, nothing is read here (the write step checks the rows as it writes them).
    Problems are raised, naming line and field."""
    path, fmt, display, version, chunk_map = plan.path, plan.fmt, plan.display, plan.version, plan.chunk_map
    trec, k, trec_options = plan.options.trec, plan.options.k, plan.options.trec_options
    index = QuestionIndex.load(version)
    total = count_records(path, fmt) if not trec else None
    problems = ProblemCollector(display)
    skipped: list[str] = []
    # Given k, the file is read once: rows are checked as they are written, in the run's transaction, and any
    # problem rolls all of it back once the rest of the file was checked too. Without k, a first pass finds the
    # widest context (k) before anything is scored.
    single_pass = k is not None
    k_note = ""
    count = 0
    widest = 0
    rows_seen = (
        ()
        if single_pass
        else _validated_rows(path, fmt, display, index, version, chunk_map, k, problems, trec_options, skipped)
    )
    for _, row in rows_seen:
        count += 1
        widest = max(widest, reached(row))
        if count % 1000 == 0:
            progress(count, total and 2 * total, "validating")
    problems.raise_if_any()
    if count == 0 and not single_pass:
        raise ImportFailed([ImportProblem(display, None, None, "the file holds no rows")])
    if k is None:
        k, k_note = inferred_k(display, fmt, widest)
    return CheckedRows(k, k_note, count, single_pass, total, index, problems, skipped)


def run_import_write(
    plan: RunImportPlan, checked: CheckedRows, *, user: Any = None, progress: Progress = no_progress
) -> Run:
    """Create the run, its chunk map and its rows, scored in batches (call it in a transaction: a problem, or a
    file that changed since the check, raises ImportFailed and nothing may be kept)."""
    path, fmt, display, version, chunk_map = plan.path, plan.fmt, plan.display, plan.version, plan.chunk_map
    index, problems, skipped, single_pass = checked.index, checked.problems, checked.skipped, checked.single_pass
    count, total, run_k, trec_options = checked.count, checked.total, checked.k, plan.options.trec_options
    run = Run.objects.create(
        version=version,
        name=plan.name,
        description=plan.description,
        system_config=plan.system,
        judge_config=judge_config_get_or_create(plan.judge) if plan.judge else None,
        k=run_k,
        gain=plan.options.gain,
        has_chunk_map=chunk_map is not None,
        source_name=display,
        source_hash=plan.source_hash,
        question_count=version.question_count,
        created_by=user,
    )
    for chunk_batch in in_batches((RunChunk(run=run, **c) for c in plan.chunk_rows), 5000):
        RunChunk.objects.bulk_create(chunk_batch)
    second = problems if single_pass else ProblemCollector(display)
    rows = (
        row
        for _, row in _validated_rows(
            path,
            fmt,
            display,
            index,
            version,
            chunk_map,
            run_k,
            second,
            trec_options,
            skipped if single_pass else None,
        )
    )
    store_rows(
        run,
        _until_a_problem(rows, second),
        index,
        chunk_map=chunk_map,
        cutoffs=plan.options.cutoffs,
        progress=(lambda written: progress(written, total, "checking, scoring and writing"))
        if single_pass
        else (lambda written: progress(count + written, 2 * count, "scoring and writing")),
    )
    second.raise_if_any()  # a problem (one pass), or the file changed between passes: nothing is kept
    if run.row_count == 0:
        raise ImportFailed([ImportProblem(display, None, None, "the file holds no rows")])
    return run


def _until_a_problem(rows: Iterable[dict[str, Any]], problems: ProblemCollector) -> Iterator[dict[str, Any]]:
    """``rows`` while the file has no problem; after the first, the rest is still read (every problem is listed)
    but nothing more is scored or written: the import will be rolled back."""
    for row in rows:
        if not problems.problems:
            yield row


def store_rows(
    run: Run,
    rows: Iterable[dict[str, Any]],
    index: QuestionIndex,
    *,
    chunk_map: ChunkMap | None,
    progress: Callable[[int], None] = lambda written: None,
    cutoffs: list[int] | None = None,
) -> None:
    """Score rows (as :func:`~.run_rows.normalize_row` gives them) in batches, write them, then the run's count and summary."""
    summary: list[pd.DataFrame] = []
    questions: list[int] = []
    qids: list[str] = []
    gold_counts = {"unanswerable": 0, "no_gold": 0, "no_relevant_gold": 0}
    written = 0
    for batch in in_batches(rows, BATCH):
        infos = [index.by_qid[row["qid"]] for row in batch]
        computed = score_rows(batch, infos, k=run.k, gain=run.gain, chunk_map=chunk_map, cutoffs=cutoffs or ())
        values = []
        summary_rows: list[tuple[str, dict[str, float | None]]] = []
        for row, info, scores in zip(batch, infos, computed):
            merged, metadata = _merge_scores(row, scores)
            values.append(
                (
                    run.pk,
                    info.pk,
                    row["retrieved"],
                    row["context_ids"] or [],
                    row["context"],
                    row["answer"],
                    row["declined"],
                    row["claims"],
                    merged,
                    metadata,
                )
            )
            summary_rows.append((slice_name(info.qtype), merged))
            questions.append(info.pk)
            qids.append(row["qid"])
            gold_counts[gold_kind(info)] = gold_counts.get(gold_kind(info), 0) + 1
        written += insert_values(Row, ROW_FIELDS, values)
        summary.append(score_frame(summary_rows))
        progress(written)
    run.row_count = written
    scores = pd.concat(summary, ignore_index=True) if summary else pd.DataFrame({"slice": []})
    score_table_write(
        run=run, questions=questions, qids=qids, types=list(scores["slice"]), scores=scores.drop(columns="slice")
    )
    run.summary = {
        **build_summary([scores], k=run.k, questions_per_slice=index.per_slice),
        "retrieval_gold": {kind: n for kind, n in gold_counts.items() if kind != "relevant"},
        **({"cutoffs": sorted({run.k, *cutoffs})} if cutoffs else {}),
    }
    run.save(update_fields=["row_count", "summary"])


def gold_kind(question: QuestionInfo) -> str:
    """How a question's gold lets retrieval be scored (see the engine's conventions)."""
    if not question.answerable:
        return "unanswerable"  # NaN, scored on abstention
    if not question.gold:
        return "no_gold"  # NaN: nothing to score retrieval against
    if not any(float(entry["grade"]) > 0 for entry in question.gold):
        return "no_relevant_gold"  # judged, nothing relevant: 0, kept in the means
    return "relevant"


def gold_note(summary: dict[str, Any]) -> str:
    """The questions whose retrieval scores are not an ordinary hit count, in words (empty when none)."""
    counts = summary.get("retrieval_gold") or {}
    parts = []
    if counts.get("no_relevant_gold"):
        parts.append(f"{counts['no_relevant_gold']} with judged gold but no relevant document score 0 on retrieval")
    if counts.get("no_gold"):
        parts.append(f"{counts['no_gold']} without gold have no retrieval scores")
    if counts.get("unanswerable"):
        parts.append(f"{counts['unanswerable']} unanswerable are scored on abstention instead")
    return (" Of its questions, " + "; ".join(parts) + ".") if parts else ""


def _merge_scores(
    row: dict[str, Any], computed: dict[str, float | None]
) -> tuple[dict[str, float | None], dict[str, Any]]:
    """Merge computed and imported scores; computed retrieval metrics and claim-level faithfulness win."""
    metadata = dict(row["metadata"])
    if row.get("context_chunks"):
        metadata["context_chunks"] = row["context_chunks"]
    merged = dict(row["scores"])
    overridden = {}
    for name, value in computed.items():
        if (
            name == "faithfulness"
            and value is None
            and merged.get("faithfulness") is not None
            and not row["claims"]
            and not row["declined"]
        ):
            continue  # a judge score imported without its claims is kept as imported
        if name in merged and merged[name] != value:
            overridden[name] = merged[name]
        merged[name] = value
    if overridden:
        metadata["imported_scores"] = overridden
    return merged, metadata


def score_frame(rows: list[tuple[str, dict[str, float | None]]]) -> pd.DataFrame:
    """One batch's scores as float columns beside a ``slice`` column (8 bytes a score, not a dict a row)."""
    frame = pd.DataFrame([scores for _, scores in rows], dtype=float)
    frame["slice"] = [s for s, _ in rows]
    return frame


def build_summary(batches: list[pd.DataFrame], *, k: int, questions_per_slice: dict[str, int]) -> dict[str, Any]:
    """The run's summary from the :func:`score_frame` of each batch."""
    frame = pd.concat(batches, ignore_index=True) if batches else pd.DataFrame({"slice": []})
    metrics = order_metrics(set(frame.columns) - {"slice"}, k)
    frame = frame.reindex(columns=[*metrics, "slice"])
    frame[metrics] = frame[metrics].astype(float)
    return summarize_scores(frame, metrics=metrics, questions_per_slice=questions_per_slice)

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

from evalcore.engine import ChunkMap

from ..models import EvalSetVersion, Row, Run, RunChunk
from .fields import FieldError, nfc
from .gc_pause import collector_paused
from .importing import (
    Progress,
    create_once,
    in_batches,
    no_progress,
    refresh_statistics,
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
from .run_questions import LOOKUP_BATCH, QuestionIndex, question_alike
from .run_rows import normalize_row, reached
from .run_rows_fast import plain_limits, plain_row, plain_rows_enabled
from .run_store import store_rows
from .scoring import QuestionInfo
from .tool_formats import tool_records
from .trec import read_import

BATCH = 2000


@dataclass(frozen=True)
class RunImportResult:
    run: Run
    created: bool
    message: str


def _row_checker(
    version: EvalSetVersion, chunk_map: ChunkMap | None, k: int | None
) -> Callable[[dict[str, Any], QuestionInfo | None], None]:
    """Return the function that checks one normalized row (and its question, None when unknown) as a row of a
    run on ``version``."""

    def check(row: dict[str, Any], info: QuestionInfo | None) -> None:
        if info is None:
            alike = question_alike(version, row["qid"])
            hint = f" (it holds {alike!r}: ids differ by case)" if alike else ""
            raise FieldError(
                "id",
                f"question {row['qid']!r} is not in {version.label}{hint}; rows must answer the version's questions",
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
    """Yield ``(line, row)`` for each valid row, its question as ``row["_question"]``; problems go to ``problems``.

    Records are normalized a batch at a time and their questions looked up in one query per batch; a
    second row for a question is a problem naming the first one's line.
    """
    records = read_import(
        path, fmt, display, trec="trec-run", holding="a run's rows", problems=problems, ties=trec.ties
    )
    records = tool_records(fmt, records, problems, door="run")
    if fmt in RANKED_RUNS and trec.skip_missing:
        records = _known_topics(records, index, skipped if skipped is not None else [])
    check = _row_checker(version, chunk_map, k)
    first_lines = index.first_lines()
    batches = in_batches(_normalized(records, fmt, index), BATCH)
    for normalized in batches:
        infos = index.lookup(_qids_of(normalized))
        for line, row, error in normalized:
            if problems.full:
                problems.truncated = True
                return
            info = None
            if row is not None:
                info = infos.get(row["qid"])
                try:
                    check(row, info)
                except FieldError as failed:
                    error = failed
            if error is not None or row is None or info is None:
                assert error is not None
                problems.add(line, error.field, error.message)
                continue
            first = first_lines.get(info.pk)
            if first:
                problems.add(
                    line,
                    "id",
                    f"question {row['qid']!r} has a second row (first on line {first}); one row per question",
                )
                continue
            first_lines.set(info.pk, line)
            row["_question"] = info
            yield line, row


def _qids_of(normalized: list[tuple[int, dict[str, Any] | None, FieldError | None]]) -> list[str]:
    return [row["qid"] for _, row, _ in normalized if row is not None]


def _normalized(
    records: Iterable[Record], fmt: str, index: QuestionIndex
) -> Iterator[tuple[int, dict[str, Any] | None, FieldError | None]]:
    """Each record as ``(line, row, None)``, or ``(line, None, error)`` when it is refused (the record itself is
    not kept: a batch of rows waiting for its questions holds the rows only)."""
    fast = plain_rows_enabled(fmt)
    field_chars, max_claims = plain_limits()
    for record in records:
        row = plain_row(record.data, field_chars, max_claims) if fast else None
        if row is not None:
            yield record.line, row, None
            continue
        try:
            yield record.line, normalize_row(record.data, fmt=fmt, text_index=index.by_text), None
        except FieldError as error:
            yield record.line, None, error


def _known_topics(records: Iterable[Record], index: QuestionIndex, skipped: list[str]) -> Iterator[Record]:
    """The run's topics that the eval set holds; the others are listed in ``skipped`` (trec_eval ignores them)."""
    for batch in in_batches(records, LOOKUP_BATCH):
        known = index.lookup(nfc(str(record.data.get("id")).strip()) for record in batch)
        for record in batch:
            if nfc(str(record.data.get("id")).strip()) in known:
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

    with collector_paused():
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
    _raise_in_line_order(problems)
    if count == 0 and not single_pass:
        raise ImportFailed([ImportProblem(display, None, None, "the file holds no rows")])
    if k is None:
        k, k_note = inferred_k(display, fmt, widest)
    return CheckedRows(k, k_note, count, single_pass, total, index, problems, skipped)


def run_import_write(
    plan: RunImportPlan,
    checked: CheckedRows,
    *,
    user: Any = None,
    progress: Progress = no_progress,
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
        batch_size=BATCH,
        cutoffs=plan.options.cutoffs,
        progress=(lambda written: progress(written, total, "checking, scoring and writing"))
        if single_pass
        else (lambda written: progress(count + written, 2 * count, "scoring and writing")),
    )
    _raise_in_line_order(second)  # a problem (one pass), or the file changed between passes: nothing is kept
    if run.row_count == 0:
        raise ImportFailed([ImportProblem(display, None, None, "the file holds no rows")])
    return run


def _raise_in_line_order(problems: ProblemCollector) -> None:
    """Raise the problems found, in the order of their lines (the reader's own, such as malformed JSON, are
    found a batch ahead of the rows' checks)."""
    problems.problems.sort(key=lambda problem: problem.line or 0)
    problems.raise_if_any()


def _until_a_problem(rows: Iterable[dict[str, Any]], problems: ProblemCollector) -> Iterator[dict[str, Any]]:
    """``rows`` while the file has no problem; after the first, the rest is still read (every problem is listed)
    but nothing more is scored or written: the import will be rolled back."""
    for row in rows:
        if not problems.problems:
            yield row


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

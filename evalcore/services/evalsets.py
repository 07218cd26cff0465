"""Import eval sets as frozen versions: atomic (all or nothing) and idempotent.

The file is read twice, streaming: first to validate every question and hash the content (no
writes), then, only if nothing was wrong, to write the new version in one transaction and seal
it. Importing the same content again creates nothing and says which version already holds it.
What the first pass learns of each question (its id, line and hash) is kept in an on-disk
:class:`.id_book.IdBook`, not in memory: the import's memory does not grow with the file.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..models import EvalSet, EvalSetVersion, FrozenError, Question
from .fields import (
    FieldError,
    as_bool,
    as_id,
    as_int,
    as_list,
    as_number,
    as_str_list,
    as_text,
    extra_fields,
    is_blank,
)
from .gc_pause import collector_paused
from .id_book import IdBook
from .importing import (
    Progress,
    Seen,
    about_file,
    create_once,
    in_batches,
    insert_values,
    no_progress,
    refresh_statistics,
    validated,
)
from .names import check_name
from .problems import CHANGED, ImportFailed, ImportProblem, ProblemCollector
from .readers import count_records, detect_format
from .run_rows import ragas_run_columns
from .tool_formats import TOOLS, text_id, tool_question, tool_records
from .trec import read_import, read_topics

QUESTION_FIELDS = {"id", "question", "type", "tags", "answerable", "reference_answer", "gold"}
RAGAS_QUESTION_FIELDS = {
    "user_input",
    "reference",
    "retrieved_contexts",
    "response",
    "reference_contexts",
    "reference_context_ids",
    "retrieved_context_ids",
    "multi_responses",
    "rubrics",
}
WRITE_BATCH = 2000


@dataclass(frozen=True)
class EvalSetImportResult:
    version: EvalSetVersion
    created: bool
    message: str


def _clean_grade(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def normalize_gold(raw: Any, field: str = "gold") -> list[dict[str, Any]]:
    """Return gold entries as ``{"doc", "grade", "start"?, "end"?}``, validated."""
    entries = []
    seen: set[tuple] = set()
    for i, item in enumerate(as_list(raw, field)):
        where = f"{field}[{i}]"
        if isinstance(item, str):
            item = {"doc": item}
        if not isinstance(item, dict):
            raise FieldError(
                where, f"must be an object with doc and grade (and optionally start, end), got {item!r:.40}"
            )
        unknown = set(item) - {"doc", "grade", "start", "end"}
        if unknown:
            raise FieldError(where, f"has unknown key(s) {sorted(unknown)}; a gold entry has doc, grade, start, end")
        doc = as_id(item.get("doc"), f"{where}.doc")
        grade = as_number(item.get("grade", 1), f"{where}.grade")
        grade = 1.0 if grade is None else grade
        if grade < 0:
            raise FieldError(f"{where}.grade", f"is {grade:g}; a grade is 0 (judged not relevant) or more")
        entry: dict[str, Any] = {"doc": doc, "grade": _clean_grade(grade)}
        has_start, has_end = item.get("start") is not None, item.get("end") is not None
        if has_start != has_end:
            raise FieldError(where, "give both start and end of the span, or neither for the whole document")
        if has_start:
            start = as_int(item["start"], f"{where}.start")
            end = as_int(item["end"], f"{where}.end")
            if not 0 <= start < end:
                raise FieldError(where, f"span must have 0 <= start < end, got start={start}, end={end}")
            entry["start"], entry["end"] = start, end
        key = (doc, entry.get("start"), entry.get("end"))
        if key in seen:
            what = f"span {entry['start']}-{entry['end']} of {doc!r}" if has_start else f"document {doc!r}"
            raise FieldError(where, f"{what} is listed twice in this question's gold")
        seen.add(key)
        entries.append(entry)
    return entries


def normalize_question(data: dict[str, Any], *, fmt: str, topics: dict[str, str] | None = None) -> dict[str, Any]:
    """Return a validated question dict ready to store; raises :class:`FieldError`."""
    if fmt in TOOLS and fmt != "ragas":
        data = tool_question(data, fmt)
    if fmt == "ragas" or ("user_input" in data and "question" not in data):
        text = as_text(data.get("user_input"), "user_input", required=True)
        qid = as_id(data["id"], "id") if not is_blank(data.get("id")) else text_id(text)
        # a Ragas table is also a run: its scores, answers and contexts are not the question's
        known = RAGAS_QUESTION_FIELDS | QUESTION_FIELDS | ragas_run_columns(data)
        reference = as_text(data.get("reference"), "reference")
        gold = normalize_gold(
            data.get("gold") if not is_blank(data.get("gold")) else data.get("reference_context_ids"),
            "gold" if not is_blank(data.get("gold")) else "reference_context_ids",
        )
    else:
        qid = as_id(data.get("id"), "id")
        if fmt in ("trec-qrels", "beir-qrels"):
            text = (topics or {}).get(qid) or f"TREC topic {qid}"
        else:
            text = as_text(data.get("question"), "question", required=True)
        known = QUESTION_FIELDS
        reference = as_text(data.get("reference_answer"), "reference_answer")
        gold = normalize_gold(data.get("gold"))
    has_relevant = any(entry["grade"] > 0 for entry in gold)
    # a judged topic whose judgments are all 0 is answerable and scores 0, as trec_eval scores it
    answerable = as_bool(data.get("answerable"), "answerable", default=True)
    if not answerable and has_relevant:
        raise FieldError(
            "answerable", "is false, but the gold lists relevant documents (grade above 0); fix one or the other"
        )
    qtype = as_text(data.get("type"), "type").strip()
    if len(qtype) > 100:
        raise FieldError("type", "is longer than 100 characters")
    tags = as_str_list(data.get("tags"), "tags")
    metadata = extra_fields(data, known)
    if "metadata" in metadata and isinstance(metadata["metadata"], dict):
        metadata.update(metadata.pop("metadata"))
    return {
        "qid": qid,
        "text": text,
        "qtype": qtype,
        "tags": tags,
        "answerable": answerable,
        "reference_answer": reference,
        "gold": gold,
        "metadata": metadata,
    }


def question_hash(question: dict[str, Any]) -> str:
    """Hash a question's content canonically (key order and whitespace do not matter)."""
    return hashlib.sha256(
        json.dumps(question, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    ).hexdigest()


def content_hash(pairs: Iterable[tuple[str, str]]) -> str:
    """Hash a version's content: its questions' hashes in question id order (file order does not matter)."""
    return sorted_content_hash(sorted(pairs))


def sorted_content_hash(pairs: Iterable[tuple[str, str]]) -> str:
    """:func:`content_hash` of pairs given already in question id order (streamed, never held)."""
    digest = hashlib.sha256()
    for qid, qhash in pairs:
        digest.update(qid.encode())
        digest.update(b"\0")
        digest.update(qhash.encode())
        digest.update(b"\n")
    return digest.hexdigest()


def question_as_dict(question: Question) -> dict[str, Any]:
    return {
        "qid": question.qid,
        "text": question.text,
        "qtype": question.qtype,
        "tags": question.tags,
        "answerable": question.answerable,
        "reference_answer": question.reference_answer,
        "gold": question.gold,
        "metadata": question.metadata,
    }


#: The columns :func:`_write_questions` writes, after the version: the keys of :func:`question_as_dict`.
STORED_FIELDS = ("qid", "text", "qtype", "tags", "answerable", "reference_answer", "gold", "metadata")


def _write_questions(version: EvalSetVersion, questions: list[dict[str, Any]]) -> int:
    """Write a batch of questions (as :func:`question_as_dict` gives them) into ``version``, which is being built.

    By ``COPY`` on PostgreSQL, one ``executemany`` on SQLite (:func:`.importing.insert_values`): the ORM's
    ``bulk_create`` built a model and compiled every value of every question, 45 % of a 50,000-question
    import's time (profiled). A sealed version is refused as ``bulk_create`` refuses it."""
    if version.sealed:
        raise FrozenError()
    return insert_values(
        Question, ("version", *STORED_FIELDS), [(version.pk, *(q[f] for f in STORED_FIELDS)) for q in questions]
    )


def _validated(
    path: Path, fmt: str, name: str, topics: dict[str, str], problems: ProblemCollector, seen: Seen
) -> Iterator[tuple[int, dict[str, Any]]]:
    records = read_import(path, fmt, name, trec="trec-qrels", holding="questions", problems=problems)
    return validated(
        tool_records(fmt, records, problems, door="questions"),
        lambda data: normalize_question(data, fmt=fmt, topics=topics),
        problems,
        key=lambda question: question["qid"],
        duplicate=lambda qid, first: f"question id {qid!r} is used twice (first on line {first}); ids must be unique",
        seen=seen,
    )


def _new_questions(
    path: Path, fmt: str, name: str, topics: dict[str, str], problems: ProblemCollector, book: IdBook
) -> Iterator[dict[str, Any]]:
    """Read the file again (it was found valid, without a duplicate) and yield the questions the book kept as new,
    each checked against what the first pass hashed; a file changed since then is a problem."""
    kept = book.new_questions()
    wanted = next(kept, None)
    for place, (line, question) in enumerate(_validated(path, fmt, name, topics, problems, lambda q, n: None), 1):
        if place > book.records:
            problems.add(line, None, CHANGED)
            return
        if wanted is None or place < wanted[0]:
            continue  # a question the base version holds
        if place > wanted[0] or question["qid"] != wanted[1] or question_hash(question) != wanted[2]:
            problems.add(line, None, CHANGED)
            return
        yield question
        wanted = next(kept, None)
    if wanted is not None and not problems:
        problems.add(None, None, CHANGED)


def evalset_import(
    *,
    path: Path,
    name: str,
    fmt: str | None = None,
    display_name: str | None = None,
    mode: Literal["replace", "extend"] = "replace",
    base_version: int | None = None,
    topics_path: Path | None = None,
    description: str = "",
    note: str = "",
    user: Any = None,
    progress: Progress = no_progress,
) -> EvalSetImportResult:
    """Create a new frozen version of eval set ``name`` from a file, or say it already exists.

    ``mode="replace"``: the file holds the whole new version. ``mode="extend"``: the new version
    is the base version's questions plus the file's (the base is the latest version unless
    ``base_version`` is given); a question id that exists in the base must not change.
    """
    display = display_name or path.name
    fmt = detect_format(path, fmt, door="questions", display=display)
    about_file(display, lambda: check_name(name, what="eval set"))
    if mode not in ("replace", "extend"):
        raise ImportFailed([ImportProblem(display, None, None, f"mode must be 'replace' or 'extend', got {mode!r}")])
    topics = read_topics(topics_path)
    eval_set = EvalSet.objects.filter(name=name).first()
    parent = _resolve_parent(eval_set, base_version, display)
    if mode == "extend" and parent is None:
        raise ImportFailed(
            [
                ImportProblem(
                    display, None, None, f"eval set {name!r} has no version to extend; import it without --extend first"
                )
            ]
        )

    total = count_records(path, fmt) if fmt != "trec-qrels" else None
    with collector_paused(), IdBook() as book:
        return _import_with_book(
            book,
            path=path,
            fmt=fmt,
            display=display,
            name=name,
            eval_set=eval_set,
            parent=parent,
            mode=mode,
            topics=topics,
            total=total,
            description=description,
            note=note,
            user=user,
            progress=progress,
        )


def _import_with_book(
    book: IdBook,
    *,
    path: Path,
    fmt: str,
    display: str,
    name: str,
    eval_set: EvalSet | None,
    parent: EvalSetVersion | None,
    mode: str,
    topics: dict[str, str],
    total: int | None,
    description: str,
    note: str,
    user: Any,
    progress: Progress,
) -> EvalSetImportResult:
    problems = ProblemCollector(display)
    if mode == "extend" and parent is not None:
        book.add_base(
            (q.qid, question_hash(question_as_dict(q))) for q in parent.questions.all().iterator(chunk_size=2000)
        )
    count = 0
    for line, question in _validated(path, fmt, display, topics, problems, book.seen):
        qhash = question_hash(question)
        known = book.base_hash(question["qid"]) if book.base_count else None
        if known is not None:
            if known != qhash:
                problems.add(
                    line,
                    "id",
                    f"question {question['qid']!r} exists in {parent} with different content; a question id is forever: "
                    f"give the changed question a new id",
                )
            continue
        alike = book.base_alike(question["qid"]) if book.base_count else None
        if alike is not None:
            problems.add(
                line,
                "id",
                f"id {question['qid']!r} differs only by case from question {alike!r} of {parent}: ids that differ "
                "only by case look like one question; rename it",
            )
            continue
        book.keep(question["qid"], qhash)
        count += 1
        if count % 1000 == 0:
            progress(count, total, "validating")
    problems.raise_if_any()
    if count == 0 and not book.base_count:
        raise ImportFailed([ImportProblem(display, None, None, "the file holds no questions")])
    digest = sorted_content_hash(book.pairs_by_id())
    question_count = book.new_count + book.base_count

    if eval_set is not None:
        existing = eval_set.versions.filter(content_hash=digest).first()
        if existing is not None:
            return EvalSetImportResult(
                existing,
                False,
                f"Nothing new: {existing.label} already holds exactly these {existing.question_count} questions.",
            )
    if mode == "extend" and not book.new_count:
        raise ImportFailed(
            [ImportProblem(display, None, None, f"every question in the file is already in {parent}: nothing to add")]
        )

    def create() -> EvalSetVersion:
        nonlocal eval_set
        eval_set, _ = EvalSet.objects.get_or_create(
            name=name, defaults={"description": description, "created_by": user}
        )
        eval_set = EvalSet.objects.select_for_update().get(pk=eval_set.pk)
        latest = eval_set.versions.order_by("-number").first()
        version = EvalSetVersion.objects.create(
            eval_set=eval_set,
            number=(latest.number + 1) if latest else 1,
            parent=parent if mode == "extend" else latest,
            content_hash=digest,
            question_count=question_count,
            source_name=display,
            note=note,
            created_by=user,
        )
        inherited = (
            (question_as_dict(q) for q in parent.questions.all().iterator(chunk_size=WRITE_BATCH))
            if mode == "extend" and parent is not None
            else iter(())
        )
        for batch in in_batches(inherited, WRITE_BATCH):
            _write_questions(version, batch)
        second_pass = ProblemCollector(display)
        written = 0
        for batch in in_batches(_new_questions(path, fmt, display, topics, second_pass, book), WRITE_BATCH):
            written += _write_questions(version, batch)
            progress(written, total, "writing")
        second_pass.raise_if_any()  # the file changed between passes
        version.sealed = True
        version.save(update_fields=["sealed"])
        return version

    version, created = create_once(
        create, existing=lambda: EvalSetVersion.objects.filter(eval_set__name=name, content_hash=digest).first()
    )
    if not created:
        return EvalSetImportResult(
            version, False, f"Nothing new: {version.label} already holds exactly these questions."
        )
    refresh_statistics(Question)
    progress(question_count, question_count, "done")
    lineage = f", derived from v{version.parent.number}" if version.parent else ""
    return EvalSetImportResult(
        version, True, f"Created {version.label} with {version.question_count} questions{lineage}."
    )


def _resolve_parent(eval_set: EvalSet | None, number: int | None, display: str) -> EvalSetVersion | None:
    if eval_set is None:
        if number is not None:
            raise ImportFailed(
                [ImportProblem(display, None, None, "there is no eval set of that name to take a base version from")]
            )
        return None
    if number is None:
        return eval_set.latest_version()
    version = eval_set.versions.filter(number=number).first()
    if version is None:
        raise ImportFailed([ImportProblem(display, None, None, f"{eval_set.name} has no version {number}")])
    return version

"""TREC files: qrels, runs and topics, read as trec_eval reads them.

qrels and runs are grouped by topic in constant memory (:mod:`.topic_groups`: the file is read twice, or
spilled to a temporary SQLite file when a topic's lines are not contiguous). A run's
documents are ranked by score, descending; ties are broken as ``ties`` says: by docno descending
(trec_eval's order, the default), by docno ascending (ir_measures' RR) or in file order. On a run
with many ties the choice moves RR@10 by up to 0.5 a topic, so it is an explicit option.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .fields import FieldError, checked_text, nfc
from .problems import ImportFailed, ImportProblem, ProblemCollector
from .readers import Record, container_of, read_records, text_lines
from .tools.ir_collections import queries_as_topics, read_msmarco_run
from .topic_groups import Lines, Parsed, Topic, TopicFile, read_topic_groups

#: How score ties are broken: trec_eval's docno descending (default), ir_measures' docno ascending, or file order.
TIE_ORDERS = ("docno-desc", "docno-asc", "file")


def _trec_file(
    *, kind: str, layout: str, value: str, parse: Callable[[str], Any], must_be: str, repeated: str
) -> TopicFile:
    """How a whitespace-separated TREC file whose lines hold the columns of ``layout`` is read, by topic (the first column).

    ``value`` names the column read with ``parse`` (a ValueError says it ``must be`` so); the
    document is the third column, and a document ``repeated`` twice for a topic is refused. Every
    malformed line is a problem with its number. A run's tag is its first line's run id.
    """
    columns = layout.split()
    at = columns.index(value)
    tag_at = columns.index("runid") if "runid" in columns else None

    def parse_line(line_no: int, parts: list[str], problems: ProblemCollector) -> Parsed | None:
        if len(parts) != len(columns):
            problems.add(line_no, None, f"a {kind} line has {len(columns)} columns ({layout}), got {len(parts)}")
            return None
        qid, doc, text = nfc(parts[0]), nfc(parts[2]), parts[at]  # ids compared in NFC
        try:
            parsed = parse(text)
        except ValueError:
            problems.add(line_no, value, f"{value} must be {must_be}, got {text[:40]!r}")
            return None
        try:
            checked_text(qid, "qid")
            checked_text(doc, "docno")
        except FieldError as error:
            problems.add(line_no, error.field, error.message)
            return None
        return qid, doc, parsed, "" if tag_at is None else parts[tag_at]

    return TopicFile(parse_line, lambda qid, doc: ("docno", f"document {doc!r} is {repeated} twice for topic {qid}"))


def _finite(text: str) -> float:
    """A TREC score: a finite number (ValueError otherwise)."""
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(text)
    return number


def _grade(text: str) -> int:
    """A TREC relevance grade: an integer of 0 (judged not relevant) or more (ValueError otherwise)."""
    grade = int(text)
    if grade < 0:
        raise ValueError(text)
    return grade


_QRELS = _trec_file(
    kind="qrels",
    layout="qid iteration docno grade",
    value="grade",
    parse=_grade,
    must_be="an integer of 0 (judged not relevant) or more",
    repeated="judged",
)
_RUN = _trec_file(
    kind="run",
    layout="qid Q0 docno rank score runid",
    value="score",
    parse=_finite,
    must_be="a number (finite)",
    repeated="retrieved",
)


def _lines(path: Path, name: str) -> Lines:
    return lambda problems: text_lines(path, name, problems)


def read_trec_qrels(path: Path, name: str, problems: ProblemCollector) -> Iterator[Record]:
    """Yield one record per topic: ``{"id", "gold": [{"doc", "grade"}]}`` (format: ``qid 0 docno grade``)."""
    for topic in read_topic_groups(_lines(path, name), problems, _QRELS):
        yield Record(topic.line, {"id": topic.qid, "gold": [{"doc": d, "grade": g} for d, g in topic.docs.items()]})


def read_trec_run(path: Path, name: str, problems: ProblemCollector, *, ties: str = "docno-desc") -> Iterator[Record]:
    """Yield one row per topic, its documents ranked as trec_eval ranks them.

    TREC run lines are ``qid Q0 docno rank score runid``. trec_eval ignores the rank column and
    sorts by score, descending, breaking ties by docno, descending; we do the same by default so
    our numbers match the field's reference tool (``ties`` chooses another order, see
    :data:`TIE_ORDERS`). A topic's run id is the one on its first line.
    """
    if ties not in TIE_ORDERS:
        raise ImportFailed(
            [ImportProblem(name, None, None, f"ties must be one of {', '.join(TIE_ORDERS)}, got {ties!r}")]
        )
    yield from _ranked(read_topic_groups(_lines(path, name), problems, _RUN), ties)


def _ranked(topics: Iterator[Topic], ties: str) -> Iterator[Record]:
    """A run's records, each topic's documents ranked by score, ties broken as ``ties`` says."""
    for topic in topics:
        items = list(topic.docs.items())
        if ties == "docno-desc":
            ranked = sorted(items, key=lambda item: (item[1], item[0]), reverse=True)
        elif ties == "docno-asc":
            ranked = sorted(items, key=lambda item: (-item[1], item[0]))
        else:
            ranked = sorted(items, key=lambda item: -item[1])  # stable: ties stay in file order
        yield Record(topic.line, {"id": topic.qid, "retrieved": [d for d, _ in ranked], "trec_run_id": topic.tag})


#: The TREC formats: their reader, what the file is called, what it holds and the command that imports it.
_TREC: dict[str, tuple[Callable[[Path, str, ProblemCollector], Iterator[Record]], str, str, str]] = {
    "trec-qrels": (read_trec_qrels, "qrels", "gold judgments", "import_evalset"),
    "trec-run": (read_trec_run, "TREC run", "a run's rows", "import_run"),
    "msmarco-run": (
        lambda path, name, problems: read_msmarco_run(_lines(path, name), problems),
        "MS MARCO run",
        "a run's rows",
        "import_run",
    ),
}


def read_import(
    path: Path,
    fmt: str,
    name: str,
    *,
    trec: str,
    holding: str,
    problems: ProblemCollector,
    ties: str = "docno-desc",
) -> Iterator[Record]:
    """Return the records of a file imported as ``holding`` (questions, a run's rows).

    The TREC format ``trec`` is read by topic; the other TREC format is refused at once, with the
    command that imports it; every other format streams through :func:`read_records`.
    """
    if fmt == "trec-run" and trec == fmt:
        return read_trec_run(path, name, problems, ties=ties)
    if fmt == "msmarco-run" and trec == "trec-run":
        return _TREC[fmt][0](path, name, problems)
    if fmt == trec:
        return _TREC[fmt][0](path, name, problems)
    if fmt in _TREC:
        _, called, holds, command = _TREC[fmt]
        raise ImportFailed(
            [ImportProblem(name, None, None, f"a {called} file holds {holds}, not {holding}; import it with {command}")]
        )
    return read_records(path, fmt, name, problems=problems)


def read_topics(path: Path | None, display: str | None = None) -> dict[str, str]:
    """TREC topics: ``qid<TAB>question text`` lines, or an SGML topics file (``<top><num> Number: 301
    <title> ...``, the title being the question); every malformed line or topic is reported."""
    if path is None:
        return {}
    name = display or path.name
    problems = ProblemCollector(name)
    if container_of(path) == "jsonl" and path.suffix.lower() in (".jsonl", ".json"):  # BEIR's queries.jsonl
        topics = queries_as_topics(read_records(path, "jsonl", name, problems=problems), problems)
        problems.raise_if_any()
        return topics
    lines = list(text_lines(path, name, problems))
    problems.raise_if_any()
    if any("<top>" in raw.lower() for _, raw in lines[:200]):
        topics = _sgml_topics(lines, problems)
    else:
        topics = {}
        for line_no, raw in lines:
            if not raw.strip():
                continue
            if "\t" not in raw:
                problems.add(line_no, None, "a topics line is 'qid<TAB>question text' (or give SGML <top> topics)")
                continue
            qid, text = raw.rstrip("\r\n").split("\t", 1)
            try:
                topics[checked_text(qid.strip(), "qid")] = checked_text(text.strip(), "question")
            except FieldError as error:
                problems.add(line_no, error.field, error.message)
    problems.raise_if_any()
    return topics


_NUM = re.compile(r"<num>\s*(?:Number\s*:)?\s*(\S+)", re.I)
_TITLE = re.compile(r"<title>\s*(?:Topic\s*:)?\s*(.*?)\s*(?=<[a-z/]|$)", re.I | re.S)


def _sgml_topics(lines: list[tuple[int, str]], problems: ProblemCollector) -> dict[str, str]:
    """Topics of an SGML file as TREC distributes them (``<top> <num> <title> <desc> <narr> </top>``)."""
    topics: dict[str, str] = {}
    block: list[str] = []
    start = 0
    for line_no, raw in lines:
        if "<top>" in raw.lower():
            block, start = [], line_no
        block.append(raw)
        if "</top>" in raw.lower():
            text = "".join(block)
            num, title = _NUM.search(text), _TITLE.search(text)
            if num is None or title is None or not title.group(1).strip():
                problems.add(start, "num" if num is None else "title", "a <top> topic needs a <num> and a <title>")
                continue
            qid = num.group(1).strip()
            if qid in topics:
                problems.add(start, "num", f"topic {qid} appears twice")
                continue
            try:
                topics[checked_text(qid, "num")] = checked_text(" ".join(title.group(1).split()), "title")
            except FieldError as error:
                problems.add(start, error.field, error.message)
    if not topics and not problems:
        problems.add(None, None, "holds no <top> ... </top> topic")
    return topics

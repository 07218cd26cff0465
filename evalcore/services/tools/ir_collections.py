"""BEIR and MS MARCO, as their distributions lay them out.

BEIR: ``queries.jsonl`` (``_id``, ``text``), ``corpus.jsonl`` (``_id``, ``title``, ``text``: documents,
not questions) and ``qrels/<split>.tsv`` (a header ``query-id corpus-id score``, then a judgment a
line). MS MARCO: ``queries.*.tsv`` (``qid<TAB>text``, our topics format), ``qrels.*.tsv`` (TREC qrels
with tabs: ``qid 0 pid grade``) and runs as its evaluation script reads them (``qid<TAB>pid<TAB>rank``,
no score: ranked by rank).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ..fields import FieldError, as_id, as_number, as_text, checked_text, json_safe
from ..problems import ProblemCollector
from ..records import Record
from ..topic_groups import Lines, Parsed, TopicFile, read_topic_groups

QRELS_HEADER = ("query-id", "corpus-id", "score")


def is_beir_qrels(names: set[str]) -> bool:
    return set(QRELS_HEADER) <= names


def is_beir_queries(names: set[str]) -> bool:
    return "_id" in names and "text" in names and "title" not in names


def is_beir_corpus(names: set[str]) -> bool:
    return {"_id", "title", "text"} <= names


def qrels_topics(records: Iterable[Record], problems: ProblemCollector) -> Iterator[Record]:
    """BEIR qrels grouped by query: one record ``{"id", "gold"}`` a query, as TREC qrels are read."""
    topics: dict[str, Record] = {}
    for record in records:
        data = record.data
        try:
            qid = as_id(data.get("query-id"), "query-id")
            doc = as_id(data.get("corpus-id"), "corpus-id")
            grade = as_number(data.get("score"), "score", allow_none=False)
            if grade < 0:
                raise FieldError("score", f"is {grade:g}; a relevance grade is 0 (judged not relevant) or more")
        except FieldError as error:
            problems.add(record.line, error.field, error.message)
            continue
        topic = topics.setdefault(qid, Record(record.line, {"id": qid, "gold": []}))
        if any(entry["doc"] == doc for entry in topic.data["gold"]):
            problems.add(record.line, "corpus-id", f"document {doc!r} is judged twice for query {qid}")
            continue
        topic.data["gold"].append({"doc": doc, "grade": grade})
    yield from topics.values()


def query_question(data: dict[str, Any]) -> dict[str, Any]:
    """A BEIR query as a plain question (no gold: the qrels give it, with the queries as topics)."""
    return {
        "id": data.get("_id"),
        "question": as_text(data.get("text"), "text", required=True),
        "metadata": json_safe(data.get("metadata") if isinstance(data.get("metadata"), dict) else {}),
    }


def queries_as_topics(records: Iterable[Record], problems: ProblemCollector) -> dict[str, str]:
    """BEIR ``queries.jsonl`` as TREC topics: query id to text."""
    topics: dict[str, str] = {}
    for record in records:
        try:
            qid = as_id(record.data.get("_id"), "_id")
            topics[qid] = checked_text(as_text(record.data.get("text"), "text", required=True).strip(), "text")
        except FieldError as error:
            problems.add(record.line, error.field, error.message)
    return topics


def tsv_kind(first_line: str) -> str | None:
    """What an MS MARCO TSV is, from its first line: qrels (``qid 0 pid grade``), a run (``qid pid rank``) or
    queries (``qid text``); None for a TSV with a header (read as CSV)."""
    parts = first_line.rstrip("\r\n").split("\t")
    if len(parts) == 4 and parts[1] in ("0", "Q0") and _integer(parts[3]):
        return "trec-qrels"
    if len(parts) == 3 and _integer(parts[2]):
        return "msmarco-run"
    if len(parts) == 2 and parts[0].strip().isdigit():
        return "topics"
    return None


def _integer(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def _msmarco_line(line_no: int, parts: list[str], problems: ProblemCollector) -> Parsed | None:
    if len(parts) != 3:
        problems.add(line_no, None, f"an MS MARCO run line has 3 columns (qid pid rank), got {len(parts)}")
        return None
    qid, pid, rank = parts
    if not _integer(rank) or int(rank) < 1:
        problems.add(line_no, "rank", f"rank must be a positive integer, got {rank[:40]!r}")
        return None
    try:
        checked_text(qid, "qid"), checked_text(pid, "pid")
    except FieldError as error:
        problems.add(line_no, error.field, error.message)
        return None
    return qid, pid, int(rank), ""


_MSMARCO_RUN = TopicFile(
    _msmarco_line, lambda qid, pid: ("pid", f"passage {pid!r} is ranked twice for query {qid}"), limited=False
)


def read_msmarco_run(lines: Lines, problems: ProblemCollector) -> Iterator[Record]:
    """An MS MARCO run (``qid<TAB>pid<TAB>rank``): one row a query, its passages by rank (in constant memory)."""
    for topic in read_topic_groups(lines, problems, _MSMARCO_RUN):
        docs = topic.docs
        yield Record(topic.line, {"id": topic.qid, "retrieved": sorted(docs, key=lambda pid: (docs[pid], pid))})

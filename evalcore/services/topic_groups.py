"""Files whose lines are grouped into one record a topic (TREC qrels and runs, MS MARCO runs), in constant memory.

A record is a topic's documents; the records come out in the order the topics first appear, each topic's
documents in file order, a document repeated for a topic refused, as if the whole file were held in memory.
It is not: the file is read twice.

* The first pass checks every line, adding its problems (in file order, with the truncation and the limit
  on topics) all before the first record comes out, as when the whole file was read first; it holds the
  current topic's documents and remembers the topics it has passed in a private temporary SQLite file
  (:func:`.id_book.scratch_database`, its page cache capped).
* Nearly always a topic's lines are contiguous: the second pass then reads the file again up to where the
  first stopped and yields each topic when the next one starts, holding one topic's documents. A count that
  differs between the passes (the file changed) is a problem.
* When a topic reappears after another (an interleaved file), the first pass takes its problems back and
  starts over, spilling every valid line to that SQLite file, which detects a document repeated across the
  topic's parts; the topics are then read back from it, grouped, in first-appearance order. We chose to start
  over rather than spill every file: a contiguous file, the usual one, is never written to disk.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .id_book import scratch_database
from .limits import limits
from .problems import CHANGED, ProblemCollector

#: Opens the file's ``(line number, text)`` lines again, adding the problems of its lines (not UTF-8, too long)
#: to the collector given (:func:`.readers.text_lines`).
Lines = Callable[[ProblemCollector], Iterable[tuple[int, str]]]

#: A valid line: its topic, its document, its value (a grade, a score, a rank) and its tag (what the topic's
#: record takes from the topic's first line: a run id, or "").
Parsed = tuple[str, str, Any, str]


@dataclass(frozen=True)
class TopicFile:
    """How a format's lines are read: ``parse`` turns a non-blank line's columns into :data:`Parsed` (or adds its
    problem and returns None); ``duplicate(topic, doc)`` is the ``(field, message)`` of a repeated document;
    ``limited``: more topics than ``limits().rows`` is refused (the limits message, the read stops)."""

    parse: Callable[[int, list[str], ProblemCollector], Parsed | None]
    duplicate: Callable[[str, str], tuple[str, str]]
    limited: bool = True


@dataclass
class Topic:
    line: int  # where the topic first appears
    qid: str
    tag: str  # the tag of that first line
    docs: dict[str, Any] = field(default_factory=dict)  # docno -> the line's value, in file order


class _Interleaved(Exception):
    """A topic reappears after another: the file is not grouped by topic."""


class _Discard(ProblemCollector):
    """The second pass's collector: the first pass reported every problem already."""

    def add(self, line: int | None, field: str | None, message: str) -> None:
        pass

    @property
    def full(self) -> bool:
        return False


@dataclass
class _Pass:
    last: int = 0  # the last line read (the second pass stops after it)
    topics: int = 0
    docs: int = 0  # the documents taken


class _Contiguous:
    """The first pass's view of a grouped file: the current topic's documents, the topics passed (on disk)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        db.execute("CREATE TABLE passed (qid TEXT PRIMARY KEY) WITHOUT ROWID")
        self._qid: str | None = None
        self._docs: set[str] = set()
        self.topics = 0

    def take(self, line: int, qid: str, doc: str, value: Any, tag: str) -> bool:
        """Take a valid line; False when its document is already the topic's."""
        if qid != self._qid:
            if not self._db.execute("INSERT OR IGNORE INTO passed VALUES (?)", (qid,)).rowcount:
                raise _Interleaved
            self._qid, self._docs = qid, set()
            self.topics += 1
        if doc in self._docs:
            return False
        self._docs.add(doc)
        return True


class _Spill:
    """Every valid line of an interleaved file, on disk, read back grouped by topic."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        db.execute("CREATE TABLE topics (line INTEGER PRIMARY KEY, qid TEXT NOT NULL UNIQUE, tag TEXT NOT NULL)")
        db.execute(
            "CREATE TABLE docs (topic INTEGER NOT NULL, line INTEGER NOT NULL, doc TEXT NOT NULL, value, "
            "PRIMARY KEY (topic, line), UNIQUE (topic, doc)) WITHOUT ROWID"
        )  # topic: the topic's first line, so that the primary key's order is the records' order
        self._qid: str | None = None
        self._topic = 0
        self.topics = 0

    def take(self, line: int, qid: str, doc: str, value: Any, tag: str) -> bool:
        if qid != self._qid:
            row = self._db.execute("SELECT line FROM topics WHERE qid = ?", (qid,)).fetchone()
            if row is None:
                self._db.execute("INSERT INTO topics VALUES (?, ?, ?)", (line, qid, tag))
                self.topics += 1
            self._qid, self._topic = qid, line if row is None else row[0]
        cursor = self._db.execute("INSERT OR IGNORE INTO docs VALUES (?, ?, ?, ?)", (self._topic, line, doc, value))
        return cursor.rowcount == 1

    def read_back(self) -> Iterator[Topic]:
        rows = self._db.execute(
            "SELECT d.topic, t.qid, t.tag, d.doc, d.value FROM docs d JOIN topics t ON t.line = d.topic "
            "ORDER BY d.topic, d.line"
        )
        for (line, qid, tag), group in itertools.groupby(rows, key=lambda row: row[:3]):
            yield Topic(line, qid, tag, {row[3]: row[4] for row in group})


def _first_pass(
    lines: Iterable[tuple[int, str]], problems: ProblemCollector, spec: TopicFile, book: _Contiguous | _Spill
) -> _Pass:
    """Check every line as one read of the whole file would, adding its problems; ``book`` takes the valid ones."""
    seen = _Pass()
    rows = limits().rows if spec.limited else None
    for line_no, raw in lines:
        if problems.full:
            problems.truncated = True
            break
        seen.last = line_no
        parts = raw.split()
        if not parts:
            continue
        parsed = spec.parse(line_no, parts, problems)
        if parsed is None:
            continue
        qid, doc = parsed[0], parsed[1]
        if not book.take(line_no, *parsed):
            problems.add(line_no, *spec.duplicate(qid, doc))
            continue
        seen.docs += 1
        seen.topics = book.topics
        if rows is not None and seen.topics > rows:
            problems.add(line_no, None, limits().message(f"the file holds more than {rows:,} topics", "rows"))
            break
    return seen


def _second_pass(lines: Iterable[tuple[int, str]], spec: TopicFile, first: _Pass, seen: _Pass) -> Iterator[Topic]:
    """The topics of a grouped file, each when the next one starts; ``seen`` counts what was read."""
    discard = _Discard("")
    topic: Topic | None = None
    for line_no, raw in lines:
        if line_no > first.last:
            break
        parts = raw.split()
        parsed = spec.parse(line_no, parts, discard) if parts else None
        if parsed is None:
            continue
        qid, doc, value, tag = parsed
        if topic is None or qid != topic.qid:
            if topic is not None:
                yield topic
            topic = Topic(line_no, qid, tag)
            seen.topics += 1
        if doc not in topic.docs:
            topic.docs[doc] = value
            seen.docs += 1
    if topic is not None:
        yield topic


def read_topic_groups(lines: Lines, problems: ProblemCollector, spec: TopicFile) -> Iterator[Topic]:
    """Yield the topics of the file of ``lines``, one :class:`Topic` each, in first-appearance order (see the
    module)."""
    mark = problems.mark()
    db = scratch_database()
    try:
        try:
            first = _first_pass(lines(problems), problems, spec, _Contiguous(db))
        except _Interleaved:
            problems.rewind(mark)
            spill = _Spill(db)
            _first_pass(lines(problems), problems, spec, spill)
            yield from spill.read_back()
            return
        seen = _Pass()
        yield from _second_pass(lines(_Discard("")), spec, first, seen)
        if (seen.topics, seen.docs) != (first.topics, first.docs):
            problems.add(None, None, CHANGED)
    finally:
        db.close()

"""TREC qrels and runs (and MS MARCO runs) read in constant memory give exactly the records and problems of the
former reader, which held the whole file grouped by topic (kept here verbatim as the reference): contiguous and
interleaved topics, repeated documents, bad and blank lines, NFC and NFD ids, a full collector, the limit on
topics, every tie order; and the memory taken does not grow with a grouped file, nor with an interleaved one."""

from __future__ import annotations

import math
import random
import tracemalloc
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from evalcore.services.fields import FieldError, checked_text, nfc
from evalcore.services.limits import limits
from evalcore.services.problems import CHANGED, ProblemCollector
from evalcore.services.readers import Record, text_lines
from evalcore.services.tools.ir_collections import _integer, read_msmarco_run
from evalcore.services.trec import TIE_ORDERS, read_trec_qrels, read_trec_run
from evalcore.services.trec import _lines as lines_of

# --- the former, in-memory readers (verbatim but for their names) -----------------------------------------------


@dataclass
class _TrecTopic:
    line: int  # where the topic first appears
    columns: list[str]  # the columns of that first line
    docs: dict[str, Any]  # docno -> the line's value (a grade or a score), in file order


def _read_trec_topics(
    path: Path,
    name: str,
    problems: ProblemCollector,
    *,
    kind: str,
    layout: str,
    value: str,
    parse: Callable[[str], Any],
    must_be: str,
    repeated: str,
) -> dict[str, _TrecTopic]:
    columns = layout.split()
    at = columns.index(value)
    topics: dict[str, _TrecTopic] = {}
    for line_no, raw in text_lines(path, name, problems):
        if problems.full:
            problems.truncated = True
            break
        parts = raw.split()
        if not parts:
            continue
        if len(parts) != len(columns):
            problems.add(line_no, None, f"a {kind} line has {len(columns)} columns ({layout}), got {len(parts)}")
            continue
        qid, doc, text = nfc(parts[0]), nfc(parts[2]), parts[at]  # ids compared in NFC
        try:
            parsed = parse(text)
        except ValueError:
            problems.add(line_no, value, f"{value} must be {must_be}, got {text[:40]!r}")
            continue
        try:
            checked_text(qid, "qid")
            checked_text(doc, "docno")
        except FieldError as error:
            problems.add(line_no, error.field, error.message)
            continue
        topic = topics.setdefault(qid, _TrecTopic(line_no, parts, {}))
        if doc in topic.docs:
            problems.add(line_no, "docno", f"document {doc!r} is {repeated} twice for topic {qid}")
            continue
        topic.docs[doc] = parsed
        if len(topics) > limits().rows:
            problems.add(line_no, None, limits().message(f"the file holds more than {limits().rows:,} topics", "rows"))
            break
    return topics


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(text)
    return number


def _grade(text: str) -> int:
    grade = int(text)
    if grade < 0:
        raise ValueError(text)
    return grade


def old_qrels(path: Path, name: str, problems: ProblemCollector) -> Iterator[Record]:
    topics = _read_trec_topics(
        path,
        name,
        problems,
        kind="qrels",
        layout="qid iteration docno grade",
        value="grade",
        parse=_grade,
        must_be="an integer of 0 (judged not relevant) or more",
        repeated="judged",
    )
    for qid, topic in topics.items():
        yield Record(topic.line, {"id": qid, "gold": [{"doc": d, "grade": g} for d, g in topic.docs.items()]})


def old_run(path: Path, name: str, problems: ProblemCollector, *, ties: str = "docno-desc") -> Iterator[Record]:
    topics = _read_trec_topics(
        path,
        name,
        problems,
        kind="run",
        layout="qid Q0 docno rank score runid",
        value="score",
        parse=_finite,
        must_be="a number (finite)",
        repeated="retrieved",
    )
    for qid, topic in topics.items():
        items = list(topic.docs.items())
        if ties == "docno-desc":
            ranked = sorted(items, key=lambda item: (item[1], item[0]), reverse=True)
        elif ties == "docno-asc":
            ranked = sorted(items, key=lambda item: (-item[1], item[0]))
        else:
            ranked = sorted(items, key=lambda item: -item[1])  # stable: ties stay in file order
        yield Record(topic.line, {"id": qid, "retrieved": [d for d, _ in ranked], "trec_run_id": topic.columns[5]})


def old_msmarco(lines: Iterable[tuple[int, str]], problems: ProblemCollector) -> Iterator[Record]:
    topics: dict[str, tuple[int, dict[str, int]]] = {}
    for line_no, raw in lines:
        if problems.full:
            problems.truncated = True
            break
        parts = raw.split()
        if not parts:
            continue
        if len(parts) != 3:
            problems.add(line_no, None, f"an MS MARCO run line has 3 columns (qid pid rank), got {len(parts)}")
            continue
        qid, pid, rank = parts
        if not _integer(rank) or int(rank) < 1:
            problems.add(line_no, "rank", f"rank must be a positive integer, got {rank[:40]!r}")
            continue
        try:
            checked_text(qid, "qid"), checked_text(pid, "pid")
        except FieldError as error:
            problems.add(line_no, error.field, error.message)
            continue
        _, docs = topics.setdefault(qid, (line_no, {}))
        if pid in docs:
            problems.add(line_no, "pid", f"passage {pid!r} is ranked twice for query {qid}")
            continue
        docs[pid] = int(rank)
    for qid, (line, docs) in topics.items():
        ranked = sorted(docs, key=lambda pid: (docs[pid], pid))
        yield Record(line, {"id": qid, "retrieved": ranked})


# --- the comparison --------------------------------------------------------------------------------------------

READERS = {
    "qrels": (old_qrels, read_trec_qrels),
    **{
        f"run-{ties}": (
            lambda p, n, c, t=ties: old_run(p, n, c, ties=t),
            lambda p, n, c, t=ties: read_trec_run(p, n, c, ties=t),
        )
        for ties in TIE_ORDERS
    },  # fmt: skip
    "msmarco": (
        lambda p, n, c: old_msmarco(text_lines(p, n, c), c),
        lambda p, n, c: read_msmarco_run(lines_of(p, n), c),
    ),
}


def outcome(reader: Callable[..., Iterator[Record]], path: Path, limit: int | None, before: int) -> tuple:
    problems = ProblemCollector("f.txt", limit)
    for i in range(before):  # problems the collector held before the read
        problems.add(i, None, "earlier")
    records = [(r.line, r.data) for r in reader(path, "f.txt", problems)]
    return records, [(p.file, p.line, p.field, p.message) for p in problems.problems], problems.truncated


def same(tmp_path: Path, kind: str, content: str | bytes, *, limit: int | None = None, before: int = 0) -> tuple:
    path = tmp_path / "f.txt"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    old, new = READERS[kind]
    expected = outcome(old, path, limit, before)
    assert outcome(new, path, limit, before) == expected
    return expected


def line(kind: str, qid: str, doc: str, value: Any = 1, tag: str = "r1") -> str:
    if kind == "qrels":
        return f"{qid} 0 {doc} {value}\n"
    if kind == "msmarco":
        return f"{qid}\t{doc}\t{value}\n"
    return f"{qid} Q0 {doc} 1 {value} {tag}\n"


KINDS = list(READERS)
NFD = unicodedata.normalize("NFD", "caf\u00e9")


@pytest.mark.parametrize("kind", KINDS)
def test_contiguous_and_interleaved_files_give_the_former_records(tmp_path, kind):
    grouped = "".join(line(kind, f"q{t}", f"d{d}", d % 3 + 1, f"r{t}") for t in range(5) for d in range(7))
    records, problems, _ = same(tmp_path, kind, grouped)
    assert [r[0] for r in records] == [1, 8, 15, 22, 29] and not problems
    interleaved = "".join(line(kind, f"q{t}", f"d{d}", 7 - d, f"r{t}{d}") for d in range(7) for t in (3, 1, 4, 0, 2))
    records, problems, _ = same(tmp_path, kind, interleaved)
    assert [r[1]["id"] for r in records] == ["q3", "q1", "q4", "q0", "q2"] and not problems
    assert len(records[0][1].get("gold") or records[0][1]["retrieved"]) == 7


@pytest.mark.parametrize("kind", KINDS)
def test_repeated_documents_are_refused_within_a_topic_and_across_its_interleaved_parts(tmp_path, kind):
    contiguous = line(kind, "a", "d1") + line(kind, "a", "d2", 2) + line(kind, "a", "d1", 3) + line(kind, "b", "d1")
    _, problems, _ = same(tmp_path, kind, contiguous)
    assert [p[1] for p in problems] == [3]
    across = contiguous + line(kind, "a", "d2", 3) + line(kind, "a", "d3") + line(kind, "b", "d1", 2)
    _, problems, _ = same(tmp_path, kind, across)
    assert [p[1] for p in problems] == [3, 5, 7]


@pytest.mark.parametrize("kind", KINDS)
def test_bad_and_blank_lines_empty_files_and_nfc_ids(tmp_path, kind):
    bad = (
        "\n   \n" + line(kind, "a", "d1") + "a 0\n" + line(kind, "a", "d2", "x") + line(kind, "a", "d3", "-1")
        + line(kind, "a", "d4", "nan") + line(kind, "a\x00", "d5") + line(kind, "a", "d\x006") + "\t\n"
        + line(kind, "b", "d1", 0) + line(kind, "a", "d7", 2)
    )  # fmt: skip
    records, problems, _ = same(tmp_path, kind, bad)
    assert problems and records
    assert same(tmp_path, kind, b"a 0 \xff\xfe 1\n" + line(kind, "a", "d1").encode())[1]
    assert same(tmp_path, kind, "") == ([], [], False)
    assert same(tmp_path, kind, "\n\n") == ([], [], False)
    composed = line(kind, "caf\u00e9", "d\u00e9") + line(kind, "x", "d") + line(kind, NFD, "d" + NFD[-2:])
    composed += line(kind, NFD, "e")
    records, problems, _ = same(tmp_path, kind, composed)
    assert len(records) == (3 if kind == "msmarco" else 2)  # MS MARCO compares ids as given


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("limit", [1, 2, 3, 5])
@pytest.mark.parametrize("before", [0, 1])
def test_a_full_collector_truncates_as_before_even_when_the_file_is_read_again(tmp_path, kind, limit, before):
    body = line(kind, "a", "d1") + "x\n" + line(kind, "b", "d1") + "y y\n" + line(kind, "a", "d1") + "z\n"
    body += line(kind, "c", "d") + "\xff\n" + line(kind, "b", "d2")
    grouped = line(kind, "a", "d1") + "x\n" + line(kind, "a", "d2") + "y y\n" + line(kind, "a", "d1") + "z\n"
    grouped += line(kind, "b", "d") + "\xff\n" + line(kind, "c", "d2") + line(kind, "c", "d3")
    raw = [text.encode().replace(b"\xc3\xbf", b"\xff") for text in (body, grouped)]  # a line not UTF-8
    for content in (body, grouped, *raw):
        records, problems, truncated = same(tmp_path, kind, content, limit=limit, before=before)
        assert len(problems) == limit and truncated


@pytest.mark.parametrize("kind", ["qrels", "run-file"])
@pytest.mark.parametrize("grouped", [True, False])
def test_the_limit_on_topics_is_reached_on_the_same_line(tmp_path, settings, kind, grouped):
    settings.IMPORT_MAX_ROWS = 3
    order = [(t, d) for t in range(5) for d in range(3)] if grouped else [(t, d) for d in range(3) for t in range(5)]
    records, problems, _ = same(tmp_path, kind, "".join(line(kind, f"q{t}", f"d{d}") for t, d in order))
    assert len(records) == 4 and "more than 3 topics" in problems[-1][3]


@pytest.mark.parametrize("ties", TIE_ORDERS)
def test_every_tie_order_ranks_as_before(tmp_path, ties):
    scores = [3, 1, 3, 2, 3, 1, 2.5, 3]
    content = "".join(line("run", t, f"d{i % 5}{i}", s) for i, s in enumerate(scores) for t in ("t1", "t2"))
    records, _, _ = same(tmp_path, f"run-{ties}", content)
    assert (
        records[0][1]["retrieved"][:4]
        == {
            "docno-desc": ["d44", "d27", "d22", "d00"],
            "docno-asc": ["d00", "d22", "d27", "d44"],
            "file": ["d00", "d22", "d44", "d27"],
        }[ties]
    )


@pytest.mark.parametrize("seed", range(40))
def test_random_files_give_the_former_records_and_problems(tmp_path, seed):
    rng = random.Random(seed)
    kind = KINDS[seed % len(KINDS)]
    topics = [f"q{i}" for i in range(rng.randint(1, 6))] + [NFD, "caf\u00e9"]
    out: list[str] = []
    for _ in range(rng.randint(0, 60)):
        roll = rng.random()
        if roll < 0.05:
            out.append(rng.choice(["\n", "bad\n", "a b c d e f g\n", line(kind, "q0", "d", "inf")]))
            continue
        topic = topics[0] if roll < 0.6 and seed % 3 else rng.choice(topics)  # some files stay grouped longer
        if roll > 0.9:
            topics = topics[1:] or topics
        out.append(line(kind, topic, f"d{rng.randint(0, 12)}", rng.choice([1, 2, 2.5, 3]), f"r{rng.randint(0, 2)}"))
    same(tmp_path, kind, "".join(out), limit=rng.choice([None, 2, 5]))


def test_a_file_changed_between_the_passes_is_a_problem(tmp_path):
    first, second = tmp_path / "first.txt", tmp_path / "second.txt"
    first.write_text(line("qrels", "a", "d1") + line("qrels", "b", "d1"))
    second.write_text(line("qrels", "a", "d1") + line("qrels", "a", "d2"))
    opened = iter([first, second])
    problems = ProblemCollector("f.txt")
    from evalcore.services.topic_groups import read_topic_groups
    from evalcore.services.trec import _QRELS

    topics = list(read_topic_groups(lambda c: text_lines(next(opened), "f.txt", c), problems, _QRELS))
    assert [t.qid for t in topics] == ["a"] and [p.message for p in problems.problems] == [CHANGED]


# --- memory ----------------------------------------------------------------------------------------------------


def peak(tmp_path: Path, kind: str, lines: int, *, interleaved: bool = False) -> int:
    """The peak of Python's allocations while the records of a generated file are read, in bytes."""
    path = tmp_path / f"{kind}-{lines}.txt"
    topics = lines // 100
    with path.open("w") as handle:
        for i in range(lines):
            t, d = (i % topics, i // topics) if interleaved else (i // 100, i % 100)
            handle.write(line(kind, f"q{t}", f"doc{t}-{d}", d % 4 if kind == "qrels" else 100 - d * 0.5))
    reader = READERS[kind][1]
    tracemalloc.start()
    try:
        problems = ProblemCollector(path.name)
        count = sum(1 for _ in reader(path, path.name, problems))
        high = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count == topics and not problems
    return high


@pytest.mark.parametrize("kind", ["qrels", "run-docno-desc"])
def test_memory_does_not_grow_with_a_grouped_file(tmp_path, kind):
    small, large = peak(tmp_path, kind, 20_000), peak(tmp_path, kind, 200_000)
    assert large < 1.5 * small + 64 * 1024, (small, large)


def test_memory_does_not_grow_with_an_interleaved_file(tmp_path):
    small, large = peak(tmp_path, "run-docno-desc", 20_000, interleaved=True), peak(tmp_path, "run-docno-desc", 200_000, interleaved=True)  # fmt: skip
    assert large < 1.5 * small + 64 * 1024, (small, large)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("grouped", [True, False])
def test_every_problem_is_known_when_the_first_record_comes_out(tmp_path, kind, grouped):
    """As when the whole file was read first: a run import checks ``problems.full`` between records."""
    order = [("a", 1), ("a", 2), ("b", 1), ("c", 1)] if grouped else [("a", 1), ("b", 1), ("a", 2), ("c", 1)]
    path = tmp_path / "f.txt"
    path.write_text("".join(line(kind, q, f"d{d}") for q, d in order) + "bad\n" + line(kind, "c", "d1"))
    problems = ProblemCollector("f.txt")
    records = READERS[kind][1](path, "f.txt", problems)
    next(records)
    assert [p.line for p in problems.problems] == [5, 6]
    assert len(list(records)) == 2 and [p.line for p in problems.problems] == [5, 6]

"""The bad-input corpus: files a careless user or an attacker sends, and what each must be told.

Each case is a file (its name and its bytes), what it was meant to hold (an eval set's questions or
a run's rows), the limits in force while it is read, and the text of the refusal, with the line it
names when it names one. ``test_bad_input_corpus`` sends every case through every door (the
command, the upload page, the API) and checks the refusal and that nothing was written or kept.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass, field

from tests.factories import QUESTIONS, ok_row

QIDS = [q["id"] for q in QUESTIONS]


@dataclass(frozen=True)
class Case:
    name: str
    holds: str  # "questions" or "rows"
    file: str
    content: bytes | Callable[[], bytes]
    says: str
    line: int | None = None
    limits: dict[str, int] = field(default_factory=dict)
    format: str | None = None

    def data(self) -> bytes:
        return self.content() if callable(self.content) else self.content


def lines(*records: object) -> bytes:
    """JSON Lines: dicts as JSON, strings as they are."""
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records).encode()


def question(i: int, **extra: object) -> dict:
    return {**QUESTIONS[i], **extra}


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def parquet(table: dict[str, list], **options: object) -> Callable[[], bytes]:
    def make() -> bytes:
        import pyarrow as pa
        import pyarrow.parquet as pq

        buffer = io.BytesIO()
        pq.write_table(pa.table(table), buffer, **options)
        return buffer.getvalue()

    return make


def corrupt_parquet() -> bytes:
    """A Parquet file whose data page is overwritten with garbage (its footer still reads)."""
    data = bytearray(parquet({"id": QIDS, "question": [f"Question {i}?" for i in range(5)]}, compression="none")())
    start = data.index(b"Question 0?")
    data[start : start + 40] = b"\xff" * 40
    return bytes(data)


def rows(*records: object) -> bytes:
    return lines(*records)


#: A field error (line 2), a syntax error (line 3) and another field error (line 4).
MIXED = lines(question(0), {"id": "q2"}, '{"id": "q3", "question": ', {"id": "q4", "question": 4})

CASES = [
    # --- nesting, encoding, BOMs -------------------------------------------------------------
    Case(
        "json nested beyond Python's recursion limit",
        "questions",
        "deep.jsonl",
        lines(question(0), '{"id": "q2", "question": "Deep?", "tags": ' + nested(100_000) + "}"),
        "nests objects and arrays too deeply; the limit is 32 levels (IMPORT_MAX_DEPTH)",
        line=2,
    ),
    Case(
        "json nested deeper than the limit",
        "rows",
        "deep.jsonl",
        rows(ok_row("q1"), {**ok_row("q2"), "extra": json.loads(nested(40))}),
        "IMPORT_MAX_DEPTH",
        line=2,
    ),
    Case(
        "a byte that is not UTF-8 on line 2",
        "questions",
        "latin1.jsonl",
        lines(question(0)) + '{"id": "q2", "question": "Caf\xe9?"}\n'.encode("latin-1") + lines(question(2)),
        "not UTF-8 text (byte 0xe9",
        line=2,
    ),
    Case(
        "a CSV byte that is not UTF-8 on line 3",
        "questions",
        "latin1.csv",
        b"id,question\nq1,Fine?\nq2,Caf\xe9?\nq3,Fine too?\n",
        "not UTF-8 text",
        line=3,
    ),
    Case(
        "UTF-16 with its byte order mark",
        "questions",
        "utf16.jsonl",
        lines(question(0)).decode().encode("utf-16"),
        "is UTF-16 text (it starts with its byte order mark); save it as UTF-8",
    ),
    Case(
        "bad UTF-8 in TREC qrels",
        "questions",
        "qrels.txt",
        b"1 0 d1 1\n2 0 d\xff2 1\n",
        "not UTF-8 text",
        line=2,
    ),
    # --- values that mean nothing -------------------------------------------------------------
    Case(
        "a NUL character in an id",
        "questions",
        "nul.jsonl",
        lines(question(0, id="q\u00001")),
        "NUL character",
        line=1,
    ),
    Case(
        "a lone surrogate in an id",  # \ud800 in JSON: not a character, no database can store it as text
        "questions",
        "surrogate.jsonl",
        lines(question(0), question(1, id="q\ud8002")),
        "lone surrogate",
        line=2,
    ),
    Case(
        "a lone surrogate in an answer",
        "rows",
        "surrogate.jsonl",
        rows(ok_row("q1"), ok_row("q2", answer="fine\udfffnot")),
        "lone surrogate",
        line=2,
    ),
    Case(
        "a lone surrogate in free-form metadata",
        "rows",
        "surrogate-metadata.jsonl",
        rows(ok_row("q1"), ok_row("q2", note="half \udfff a pair")),
        "lone surrogate",
        line=2,
    ),
    Case(
        "a NUL character in an answer",
        "rows",
        "nul.jsonl",
        rows(ok_row("q1"), ok_row("q2", answer="fine\u0000not")),
        "NUL character",
        line=2,
    ),
    Case(
        "a NaN score",
        "rows",
        "nan.jsonl",
        rows(ok_row("q1")) + b'{"id": "q2", "scores": {"answer_relevance": NaN}}\n',
        "is NaN",
        line=2,
    ),
    Case(
        "an infinite score",
        "rows",
        "inf.jsonl",
        rows(ok_row("q1")) + b'{"id": "q2", "scores": {"answer_relevance": 1e999}}\n',
        "finite",
        line=2,
    ),
    Case(
        "an infinite number in free-form metadata",
        "rows",
        "inf-meta.jsonl",
        rows(ok_row("q1")) + b'{"id": "q2", "latency": -Infinity}\n',
        "infinite number",
        line=2,
    ),
    Case(
        "a NaN TREC run score",
        "rows",
        "run.trec",
        b"q1 Q0 d1 1 0.9 sys\nq2 Q0 d3 1 nan sys\n",
        "score must be a number",
        line=2,
        format="trec-run",
    ),
    # --- limits ------------------------------------------------------------------------------
    Case(
        "a line longer than the line limit",
        "rows",
        "long.jsonl",
        rows(ok_row("q1"), ok_row("q2", context="x" * 5000), ok_row("q3")),
        "the line is longer than 2,048 bytes; the limit is 2,048 bytes (IMPORT_MAX_LINE_BYTES)",
        line=2,
        limits={"IMPORT_MAX_LINE_BYTES": 2048},
    ),
    Case(
        "a field longer than the field limit",
        "questions",
        "long.csv",
        b"id,question\nq1,Fine?\nq2," + b"y" * 1500 + b"\n",
        "is 1,500 characters long; the limit is 1,000 characters (IMPORT_MAX_FIELD_CHARS)",
        line=3,
        limits={"IMPORT_MAX_FIELD_CHARS": 1000},
    ),
    Case(
        "more claims in a row than the claims limit",
        "rows",
        "claims.jsonl",
        rows(ok_row("q1", claims=[{"text": f"C{i}.", "supported": True} for i in range(12)])),
        "lists 12 claims; the limit is 10 claims (IMPORT_MAX_CLAIMS)",
        line=1,
        limits={"IMPORT_MAX_CLAIMS": 10},
    ),
    Case(
        "more records than the rows limit",
        "questions",
        "many.jsonl",
        lines(*QUESTIONS),
        "the file holds more than 3 records; the limit is 3 records (IMPORT_MAX_ROWS)",
        line=4,
        limits={"IMPORT_MAX_ROWS": 3},
    ),
    Case(
        "a small zstd Parquet that decompresses to one huge question",
        "questions",
        "bomb.parquet",
        parquet({"id": ["q1"], "question": ["z" * 3_000_000]}, compression="zstd", use_dictionary=False),
        "decompresses to",
        limits={"IMPORT_MAX_LINE_BYTES": 1_000_000},
    ),
    Case(
        "a Parquet file bigger decompressed than the limit",
        "questions",
        "big.parquet",
        parquet({"id": QIDS, "question": ["w" * 20_000] * 5}, compression="zstd", use_dictionary=False),
        "(IMPORT_MAX_DECOMPRESSED_BYTES)",
        limits={"IMPORT_MAX_DECOMPRESSED_BYTES": 50_000},
    ),
    Case(
        "a corrupt Parquet page",
        "questions",
        "corrupt.parquet",
        corrupt_parquet,
        "Parquet",
    ),
    # --- syntax: every problem of the file, each on its own line ------------------------------
    Case(
        "a field error before a syntax error is still reported",
        "questions",
        "mixed.jsonl",
        MIXED,
        "field 'question': is required",
        line=2,
    ),
    Case(
        "a syntax error after a field error is reported too",
        "questions",
        "mixed.jsonl",
        MIXED,
        "malformed JSON",
        line=3,
    ),
    Case(
        "a CSV line with more cells than the header",
        "questions",
        "cells.csv",
        b"id,question\nq1,Fine?\nq2,One?,two,three\n",
        "the line has 4 cells but the header names 2 columns",
        line=3,
    ),
]

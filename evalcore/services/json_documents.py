"""JSON documents that hold many records, read record by record as JSON Lines are.

Tools write JSON arrays (pandas' ``to_json(orient="records")``, Label Studio's JSON exports,
DeepEval's goldens) or an object that wraps one (DeepEval's ``test_run_*.json``:
``{"testCases": [...]}``). Wherever JSON Lines is accepted these are too: each record keeps the
line it starts on, so problems are reported as for JSON Lines. Unlike JSON Lines, a document is
parsed from one text held in memory (its lines still obey ``IMPORT_MAX_LINE_BYTES``).
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .fields import FieldError, check_depth
from .limits import limits
from .problems import ProblemCollector

#: Keys under which a tool's JSON object keeps its records (DeepEval's test run: ``testCases``; an Inspect AI
#: log: ``samples``; promptfoo's ``--output`` JSON: ``results``, an object whose own ``results`` are the records).
WRAPPERS = ("testCases", "test_cases", "goldens", "items", "examples", "records", "samples", "results")

_WS = re.compile(r"\s*")


def is_json_document(path: Path) -> bool:
    """Whether a ``.json``/``.jsonl`` file is one JSON document (an array, or an object over several lines, or a
    one-line object that wraps a list of records) rather than JSON Lines."""
    with path.open("rb") as handle:
        head = handle.read(1 << 16)
    if head.startswith(codecs.BOM_UTF8):
        head = head[3:]
    text = head.decode("utf-8", errors="replace").lstrip()
    if text.startswith("["):
        return True
    if not text.startswith("{"):
        return False
    first, _, rest = text.partition("\n")
    try:
        value = json.loads(first)
    except json.JSONDecodeError as error:
        # an object that goes on past its first line is a document; a line broken before its end is a bad JSON Line
        return error.pos >= len(first.rstrip())
    return not rest.strip() and isinstance(value, dict) and wrapper_key(value) is not None


def wrapper_key(value: dict[str, Any]) -> str | None:
    """The key under which an object keeps its records (a list of objects), if it is a wrapper."""
    return next((key for key in WRAPPERS if _records_under(value, key) is not None), None)


def _records_under(value: dict[str, Any], key: str) -> list[Any] | None:
    """The records an object keeps under ``key``: a list of objects, or an object keeping them under the same key
    (promptfoo's ``{"results": {"results": [...]}}``)."""
    inner = value.get(key)
    if isinstance(inner, dict) and key in inner and not isinstance(inner[key], dict):
        inner = inner[key]
    if isinstance(inner, list) and all(isinstance(v, dict) for v in inner):
        return inner
    return None


def first_record(head: str) -> dict[str, Any] | None:
    """The first record of a JSON array from the start of its text (to tell its format without reading it all)."""
    start = _WS.match(head, 0).end()  # type: ignore[union-attr]
    if not head.startswith("[", start):
        return None
    try:
        item, _ = json.JSONDecoder().raw_decode(head, _WS.match(head, start + 1).end())  # type: ignore[union-attr]
    except json.JSONDecodeError:
        return None
    return item if isinstance(item, dict) else None


def read_json_document(text: str, problems: ProblemCollector) -> Iterator[tuple[int, Any]]:
    """Yield ``(line, record)`` for each record of a JSON document's text; malformed JSON is a problem with its line."""
    start = _WS.match(text, 0).end()  # type: ignore[union-attr]
    if text.startswith("[", start):
        yield from _array_items(text, start, problems)
        return
    try:
        value = json.loads(text)
        check_depth(value)
    except json.JSONDecodeError as error:
        problems.add(error.lineno, None, f"malformed JSON: {error.msg} (column {error.colno})")
        return
    except (RecursionError, FieldError):
        problems.add(None, None, limits().message("the JSON nests objects and arrays too deeply", "depth"))
        return
    if not isinstance(value, dict):
        problems.add(1, None, f"a JSON document must be an array of objects, got {type(value).__name__}")
        return
    key = wrapper_key(value)
    if key is None:
        yield 1 + text.count("\n", 0, start), value
        return
    records = _records_under(value, key) or []
    found = re.search(r'"' + re.escape(key) + r'"\s*:\s*\[', text)
    if found is not None:
        items = list(_array_items(text, found.end() - 1, ProblemCollector(problems.file)))
        if len(items) == len(records):
            yield from items
            return
    line = 1 + text.count("\n", 0, found.start()) if found else 1
    for item in records:
        yield line, item


def _array_items(text: str, start: int, problems: ProblemCollector) -> Iterator[tuple[int, Any]]:
    """Parse the array that opens at ``text[start]`` one item at a time, counting lines as it goes."""
    decoder = json.JSONDecoder()
    pos = _WS.match(text, start + 1).end()  # type: ignore[union-attr]
    line, counted = 1 + text.count("\n", 0, pos), pos
    if text.startswith("]", pos):
        return
    while True:
        line += text.count("\n", counted, pos)
        counted = pos
        try:
            item, end = decoder.raw_decode(text, pos)
            check_depth(item)
        except json.JSONDecodeError as error:
            problems.add(error.lineno, None, f"malformed JSON: {error.msg} (column {error.colno})")
            return
        except (RecursionError, FieldError):
            problems.add(line, None, limits().message("the JSON nests objects and arrays too deeply", "depth"))
            return
        yield line, item
        pos = _WS.match(text, end).end()  # type: ignore[union-attr]
        if text.startswith(",", pos):
            pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
            continue
        if text.startswith("]", pos):
            return
        where = 1 + text.count("\n", 0, pos)
        problems.add(where, None, "malformed JSON: expected ',' or ']' between the array's records")
        return

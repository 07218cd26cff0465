"""The fast path of row validation gives what the full path gives, or steps aside.

:func:`~evalcore.services.run_rows_fast.plain_row` may only ever return the row
:func:`~evalcore.services.run_rows.normalize_row` returns for the same record (then the import is faster) or
None (then the full path accepts the record or refuses it, naming its field). Each field of a plain row is
given every awkward value in turn (blank, padded, non-ASCII, of the wrong type, over a limit, NaN, a list
written as text, ...) and the two paths are compared; plain rows must take the fast path.
"""

from __future__ import annotations

import copy
import itertools
import math
from typing import Any

import pytest

from evalcore.services.fields import FieldError
from evalcore.services.run_rows import normalize_row
from evalcore.services.run_rows_fast import PLAIN_FORMATS, plain_row
from tests.factories import ok_row

FIELD_CHARS = 60
MAX_CLAIMS = 4

AWKWARD: list[Any] = [
    None,
    "",
    " ",
    "x",
    " x",
    "x ",
    "x\u00a0",
    "\u00a0x",
    "\x1fx",
    "caf\u00e9",
    "cafe\u0301",
    "a\x00b",
    "[]",
    ' ["a"]',
    '["a", "b"]',
    "{}",
    '{"m": 1}',
    "y" * FIELD_CHARS,
    "y" * (FIELD_CHARS + 1),
    " " * (FIELD_CHARS + 5),
    0,
    1,
    -3,
    2**60,
    10**400,
    1.5,
    math.nan,
    math.inf,
    True,
    False,
    [],
    ["a"],
    [""],
    [" "],
    ["a", "a"],
    ["a", 1],
    ["a", None],
    ["caf\u00e9"],
    ["a\x00"],
    ["y" * (FIELD_CHARS + 1)],
    [["a"]],
    ("a", "b"),
    {},
    {"m": 1},
    {"m": None},
    {" m": 1},
    {"m ": 1},
    {"": 1},
    {"m\u00a0": 1},
    {"n" * 101: 1},
    {"m": True},
    {"m": "1"},
    {"m": math.nan},
    {"m": math.inf},
    {"m": 10**400},
    {"m": 2**60},
    {"m": [1]},
    {"a\x00": 1},
]

CLAIMS: list[Any] = [
    [{"text": "A.", "supported": True}],
    [{"supported": True, "text": "A."}],
    [{"text": "A.", "supported": True, "rationale": "why"}],
    [{"text": "A.", "supported": True, "rationale": ""}],
    [{"text": "A.", "supported": True, "rationale": " "}],
    [{"text": "A.", "supported": True, "rationale": None}],
    [{"text": "A.", "supported": True, "rationale": 3}],
    [{"text": "A.", "supported": True, "rationale": "a\x00"}],
    [{"text": "A.", "supported": True, "extra": 1}],
    [{"text": "A.", "supported": 1}],
    [{"text": "A.", "supported": "yes"}],
    [{"text": "A.", "supported": None}],
    [{"text": "A."}],
    [{"text": "", "supported": True}],
    [{"text": " ", "supported": True}],
    [{"text": None, "supported": True}],
    [{"text": 5, "supported": True}],
    [{"text": "y" * (FIELD_CHARS + 1), "supported": True}],
    [{"text": "a\x00", "supported": True}],
    [{"text": f"C{i}.", "supported": True} for i in range(MAX_CLAIMS)],
    [{"text": f"C{i}.", "supported": True} for i in range(MAX_CLAIMS + 1)],
    ["A."],
    [None],
    '[{"text": "A.", "supported": true}]',
]

FIELDS = ("id", "retrieved", "context_ids", "context", "answer", "declined", "claims", "scores")


def full_path(data: dict[str, Any], fmt: str) -> dict[str, Any] | FieldError:
    try:
        return normalize_row(copy.deepcopy(data), fmt=fmt)
    except FieldError as error:
        return error


def assert_same(data: dict[str, Any], fmt: str = "jsonl") -> bool:
    """The fast path gives the full path's row or None (never a row the full path refuses); True when taken."""
    fast = plain_row(copy.deepcopy(data), FIELD_CHARS, MAX_CLAIMS)
    if fast is None:
        return False
    full = full_path(data, fmt)
    assert not isinstance(full, FieldError), f"the fast path accepted {data!r}; the full path says {full.message}"
    assert fast == full, data
    assert [type(v) for v in fast["scores"].values()] == [type(v) for v in full["scores"].values()]
    return True


@pytest.fixture(autouse=True)
def small_limits(settings):
    settings.IMPORT_MAX_FIELD_CHARS = FIELD_CHARS
    settings.IMPORT_MAX_CLAIMS = MAX_CLAIMS


def plain(**overrides: Any) -> dict[str, Any]:
    return ok_row(
        "q1", **{"context": ["chunk one", "chunk two"], "scores": {"relevance": 4, "latency": 0.25}, **overrides}
    )


@pytest.mark.parametrize("fmt", sorted(PLAIN_FORMATS))
def test_plain_rows_take_the_fast_path(fmt):
    for row in (plain(), ok_row("q1"), {"id": "q2"}, plain(context=[], claims=[], scores={}), plain(declined=None)):
        assert assert_same(row, fmt), row


@pytest.mark.parametrize("field", FIELDS)
def test_every_awkward_value_of_a_field_gives_the_full_paths_row_or_none(field):
    taken = 0
    for value in AWKWARD + (CLAIMS if field == "claims" else []):
        taken += assert_same(plain(**{field: value}))
    assert taken >= 1


def test_fields_missing_or_extra():
    for field in FIELDS:
        row = plain()
        del row[field]
        assert_same(row)
    assert not assert_same(plain(extra="kept as metadata"))
    assert not assert_same(plain(**{"scores.latency": 3}))
    assert not assert_same({"user_input": "Q?", "response": "A."})


def test_pairs_of_awkward_values():
    values = [None, "", " x", "caf\u00e9", 1, ["a"], [" "], {"m": 1}, True]
    for (first, second), a, b in itertools.product(itertools.combinations(FIELDS, 2), values, values):
        assert_same(plain(**{first: a, second: b}))

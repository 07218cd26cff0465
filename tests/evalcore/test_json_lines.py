"""Lines of JSON are read to the same values whichever parser reads them: orjson where it can, json where orjson
refuses (NaN, integers beyond 64 bits, lone surrogates) or where the line is malformed, so problems still name
the column."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.services.fields import loads_fast

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**63 - 5, max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_any_json_value_reads_the_same_as_json_reads_it(value):
    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False)):
        assert loads_fast(text) == json.loads(text)


@pytest.mark.parametrize(
    "text",
    ['{"score": NaN}', '{"score": -Infinity}', '{"n": 123456789012345678901234567890}', '{"t": "\\ud800"}'],
)
def test_what_orjson_refuses_is_read_as_json_reads_it(text):
    value, expected = loads_fast(text), json.loads(text)
    assert json.dumps(value) == json.dumps(expected)  # NaN != NaN: compared as text


def test_a_malformed_line_raises_json_s_error_with_its_column():
    text = '{"id": "q1", oops}'
    with pytest.raises(json.JSONDecodeError) as error:
        loads_fast(text)
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    assert (
        (error.value.msg, error.value.colno)
        == (expected.value.msg, expected.value.colno)
        == (
            "Expecting property name enclosed in double quotes",
            14,
        )
    )

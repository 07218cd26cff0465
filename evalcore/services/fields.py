"""Field coercion for imported records: JSON values as they are, CSV cells from their text.

Each function raises :class:`FieldError` naming the field and saying what was expected, which
the importer turns into a problem with the file and line.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from .limits import limits


def nfc(text: str) -> str:
    """Return an id in Unicode NFC, the form ids are stored and compared in ("café" typed or decomposed is one id)."""
    return text if text.isascii() else unicodedata.normalize("NFC", text)


def encodable(text: str) -> bool:
    """Whether ``text`` is all characters: a lone surrogate (``"\\ud800"`` in JSON, half of a pair) is not one, and no
    database stores it as text. ASCII text is answered without looking (CPython knows it)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _surrogate_problem(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        code = ord(text[error.start])
        return (
            f"holds a lone surrogate (\\u{code:04x}) at position {error.start + 1}, half of a pair that is not a "
            "character; fix the program that wrote it or the text is refused"
        )
    return ""


class FieldError(Exception):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


_TRUE = {"true", "1", "yes", "y", "t"}
_FALSE = {"false", "0", "no", "n", "f"}


def is_blank(value: Any) -> bool:
    return (
        value is None
        or (isinstance(value, str) and value.strip() == "")
        or (isinstance(value, float) and math.isnan(value))
    )


def as_id(value: Any, field: str) -> str:
    if isinstance(value, bool) or is_blank(value):
        raise FieldError(field, "is required: a non-empty id (string or integer)")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, (str, int)):
        raise FieldError(field, f"must be a string or an integer id, got {type(value).__name__}")
    text = nfc(str(value).strip())
    if len(text) > 200:
        raise FieldError(field, f"is {len(text)} characters long; ids are at most 200")
    if "\x00" in text:
        raise FieldError(field, "holds a NUL character (\\u0000), which no id may hold")
    if not encodable(text):
        raise FieldError(field, _surrogate_problem(text))
    return text


def as_text(value: Any, field: str, *, required: bool = False) -> str:
    """Return the value as text within the field length limit; blank is "" (or an error when ``required``)."""
    if type(value) is str and value and not value.isspace():
        return checked_text(value, field)
    if is_blank(value):
        if required:
            raise FieldError(field, "is required and must be non-empty text")
        return ""
    if not isinstance(value, str):
        raise FieldError(field, f"must be text, got {type(value).__name__} {value!r:.40}")
    return checked_text(value, field)


def checked_text(text: str, field: str) -> str:
    """Refuse text over the field length limit or holding a NUL character (no database stores one in text)."""
    limit = limits()
    if (
        len(text) <= limit.field_chars and "\x00" not in text and encodable(text)
    ):  # the common case, checked first: imports call this per value
        return text
    if len(text) > limit.field_chars:
        raise FieldError(field, limit.message(f"is {len(text):,} characters long", "field_chars"))
    if "\x00" in text:
        raise FieldError(
            field,
            f"holds a NUL character (\\u0000) at position {text.index(chr(0)) + 1}; remove it or the text is refused",
        )
    if not encodable(text):
        raise FieldError(field, _surrogate_problem(text))
    return text


def as_bool(value: Any, field: str, *, default: bool | None = None) -> bool:
    if is_blank(value):
        if default is None:
            raise FieldError(field, "is required: true or false")
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise FieldError(field, f"must be true or false, got {value!r:.40}")


def as_number(value: Any, field: str, *, allow_none: bool = True, nan_is_null: bool = False) -> float | None:
    """Return the value as a finite float; blank is None (when allowed).

    NaN is an error unless ``nan_is_null`` (formats that document NaN as "no value", such as
    Ragas result tables): a NaN must never silently leave a mean.
    """
    if isinstance(value, float) and math.isnan(value) and not nan_is_null:
        raise FieldError(field, "is NaN: give a number, or null (an empty cell) where the value is undefined")
    if is_blank(value):
        if allow_none:
            return None
        raise FieldError(field, "is required: a number")
    if isinstance(value, bool):
        raise FieldError(field, f"must be a number, got a boolean {value!r}")
    if not isinstance(value, (int, float, str)):
        raise FieldError(field, f"must be a number, got {type(value).__name__}")
    try:
        number = float(value)
    except ValueError:
        raise FieldError(field, f"must be a number, got {value!r:.40}") from None
    except OverflowError:
        raise FieldError(field, f"must be a finite number, got one of {len(str(value)):,} digits") from None
    if math.isnan(number) and nan_is_null:
        return None
    if not math.isfinite(number):
        raise FieldError(field, f"must be a finite number, got {value!r}")
    return number


def as_int(value: Any, field: str) -> int:
    number = as_number(value, field, allow_none=False)
    if number is None or not number.is_integer():
        raise FieldError(field, f"must be a whole number, got {value!r}")
    return int(number)


def decoded(value: Any, field: str) -> Any:
    """Return a JSON-looking CSV cell decoded (a list cell also as Python or numpy writes it); other values unchanged."""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] == "[":
            return parse_list_cell(text, field)
        if text[:1] == "{":
            return parse_json(text, field)
    return value


def parse_list_cell(text: str, field: str) -> Any:
    """Read a list cell written as JSON, as a Python list (pandas' ``to_csv`` of a list column) or
    as a numpy array (a Parquet table saved again as CSV: ``['a' 'b']``, no commas).

    Each is read only when it cannot mean anything else: numpy's ``['a' 'b']`` is also a valid
    Python literal meaning ``['ab']``, so a cell whose items are not separated by commas is read as
    numpy writes it; a numpy array shortened with ``...`` does not hold the whole list and is
    refused, as is anything that is none of the three.
    """
    try:
        return parse_json(text, field)
    except FieldError as error:
        json_error = error
    if "\x00" in text:
        raise json_error
    items = _quoted_items(text)
    if items is None:
        items = _literal_items(text)
    if items is None:
        raise FieldError(
            field, f"{json_error.message} and is not a Python or numpy list either; write the list as JSON"
        ) from None
    if items == "shortened":
        raise FieldError(
            field,
            "holds a list numpy shortened with '...' (it does not hold the whole list); save the table as "
            "Parquet or JSON, or with numpy's threshold raised",
        )
    return items


_QUOTED = r"'(?:[^'\\\n]|\\.)*'" + "|" + r'"(?:[^"\\\n]|\\.)*"'
_NUMPY_STRINGS = re.compile(rf"\[\s*(?:{_QUOTED})(?:\s+(?:{_QUOTED}))*\s*\]")
_PYTHON_STRINGS = re.compile(rf"\[\s*(?:{_QUOTED})(?:\s*,\s*(?:{_QUOTED}))*\s*,?\s*\]")


def _quoted_items(text: str) -> list[Any] | None:
    """The fast path of :func:`_literal_items` for the common cells: quoted strings only, all with commas or none."""
    import ast

    if _NUMPY_STRINGS.fullmatch(text) or _PYTHON_STRINGS.fullmatch(text):
        return [item[1:-1] if "\\" not in item else ast.literal_eval(item) for item in re.findall(_QUOTED, text)]
    return None


def _literal_items(text: str) -> list[Any] | str | None:
    """The items of ``[x, y]`` or ``[x y]`` whose items are quoted strings or numbers; None when it is neither."""
    import ast
    import io
    import tokenize

    try:
        tokens = [
            t
            for t in tokenize.generate_tokens(io.StringIO(text).readline)
            if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT)
        ]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    if len(tokens) < 2 or tokens[0].string != "[" or tokens[-1].string != "]":
        return None
    inner = tokens[1:-1]
    if any(t.string == "..." for t in inner):
        return "shortened"
    commas = [t for t in inner if t.string == ","]
    values: list[Any] = []
    sign = ""
    expect_value = True
    for token in inner:
        if token.string == ",":
            if expect_value or not commas:
                return None
            expect_value = True
            continue
        if token.string == "-" and not sign:
            sign = "-"
            continue
        if token.type not in (tokenize.STRING, tokenize.NUMBER) or (sign and token.type != tokenize.NUMBER):
            return None
        if commas and not expect_value:
            return None  # two items with no comma between them in a list that uses commas
        try:
            value = ast.literal_eval(sign + token.string)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
        if isinstance(value, bytes):
            return None
        values.append(value)
        sign = ""
        expect_value = False
    if sign:
        return None
    return values


def parse_json(text: str | bytes, field: str | None = None, *, finite: bool = False) -> Any:
    """Parse JSON text within the nesting limit; :class:`FieldError` on ``field`` says what is wrong and where.

    NaN and infinite numbers parse (as floats) so that the field rules refuse them by name, unless
    ``finite``: then they are refused here (API bodies and forms, where no field rule follows). A
    value nested deeper than ``IMPORT_MAX_DEPTH`` is refused before anything walks it.
    """
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float) if finite else json.loads(text)
    except _NotFinite as error:
        raise FieldError(
            field or "", f"holds {error}, which is not a finite number; JSON numbers must be finite"
        ) from None
    except json.JSONDecodeError as error:
        where = f"line {error.lineno}, column {error.colno}" if error.lineno > 1 else f"column {error.colno}"
        raise FieldError(field or "", f"holds malformed JSON ({error.msg}, {where})") from None
    except RecursionError:
        raise FieldError(field or "", limits().message("holds JSON nested too deeply to read", "depth")) from None
    except UnicodeDecodeError as error:
        raise FieldError(field or "", f"is not UTF-8 text ({error.reason} at byte {error.start + 1})") from None
    check_depth(value, field)
    return value


class _NotFinite(ValueError):
    pass


def _no_constant(name: str) -> Any:
    raise _NotFinite(name)


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise _NotFinite(text)
    return number


def parse_json_object(text: str, what: str) -> dict[str, Any]:
    """Parse the text of a JSON object (a config typed into a form or sent in a field), finite and within the limits."""
    value = parse_json(text, what, finite=True)
    if not isinstance(value, dict):
        raise FieldError(what, f"must be a JSON object {{...}}, got {type(value).__name__}")
    json_safe(value, what)
    return value


def json_depth(value: Any, *, stop: int | None = None) -> int:
    """How deeply objects and arrays nest in ``value`` (a scalar is 0), walked without recursion.

    With ``stop``, the walk ends as soon as that depth is exceeded (the answer is then ``stop + 1``).
    """
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Iterable[Any] = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        depth += 1
        if depth > deepest:
            deepest = depth
            if stop is not None and deepest > stop:
                return deepest
        stack.extend((child, depth) for child in children)
    return deepest


def check_depth(value: Any, field: str | None = None) -> None:
    """Refuse a value whose objects and arrays nest deeper than ``IMPORT_MAX_DEPTH``."""
    limit = limits()
    if json_depth(value, stop=limit.depth) > limit.depth:
        raise FieldError(field or "", limit.message("nests objects and arrays too deeply", "depth"))


def as_list(value: Any, field: str) -> list:
    if is_blank(value):
        return []
    value = decoded(value, field)
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        raise FieldError(field, f"must be a list (a JSON array), got {type(value).__name__} {value!r:.40}")
    return list(value)


def as_str_list(value: Any, field: str) -> list[str]:
    items = as_list(value, field)
    limit = limits().field_chars
    if all(
        type(item) is str and 0 < len(item) <= limit and "\x00" not in item and not item.isspace() for item in items
    ):
        return [nfc(item) for item in items]  # the common case (non-empty ids within the limits), checked in one pass
    out = []
    for i, item in enumerate(items):
        if isinstance(item, bool) or not isinstance(item, (str, int)) or (isinstance(item, str) and not item.strip()):
            raise FieldError(f"{field}[{i}]", f"must be a non-empty id (string or integer), got {item!r:.40}")
        out.append(nfc(checked_text(str(item), f"{field}[{i}]")))
    return out


def as_dict(value: Any, field: str) -> dict:
    if is_blank(value):
        return {}
    value = decoded(value, field)
    if not isinstance(value, dict):
        raise FieldError(field, f"must be an object (a JSON {{...}}), got {type(value).__name__}")
    return value


def json_safe(value: Any, field: str = "") -> Any:
    """Return a free-form value (metadata, a config) as JSON that every database stores.

    numpy scalars and arrays become Python; NaN becomes null (no value), but an infinite number, a
    NUL character in text or a key, or nesting deeper than ``IMPORT_MAX_DEPTH`` is refused with
    the field's name.
    """
    check_depth(value, field)
    return _json_safe(value, field)


def _json_safe(value: Any, field: str) -> Any:
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value):
            return None
        raise FieldError(field, f"holds an infinite number ({value}); give a finite number or null")
    if isinstance(value, str):
        return checked_text(value, field)
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            name = checked_text(str(key), field)
            out[name] = _json_safe(item, f"{field}.{name}" if field else name)
        return out
    if isinstance(value, (list, tuple)):
        return [_json_safe(item, f"{field}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, bytes):
        raise FieldError(field, "holds binary data; give text, numbers, lists or objects")
    return value


def extra_fields(data: dict[str, Any], known: Iterable[str], *, field: str = "") -> dict[str, Any]:
    """The record's fields other than ``known``, kept as metadata (checked by :func:`json_safe`)."""
    skip = set(known)
    return {
        checked_text(str(key), field or str(key)): json_safe(value, f"{field}.{key}" if field else str(key))
        for key, value in data.items()
        if key not in skip
    }


def object_in_text(value: Any) -> Any:
    """A cell that holds a JSON object as text (a CSV export's structured column), decoded; anything else as it is."""
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            pass
    return value

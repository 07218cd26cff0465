"""Field coercion for imported records: JSON values as they are, CSV cells from their text.

Each function raises :class:`FieldError` naming the field and saying what was expected, which
the importer turns into a problem with the file and line.
"""

from __future__ import annotations

import json
import math
from typing import Any


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
    text = str(value).strip()
    if len(text) > 200:
        raise FieldError(field, f"is {len(text)} characters long; ids are at most 200")
    return text


def as_text(value: Any, field: str, *, required: bool = False) -> str:
    if is_blank(value):
        if required:
            raise FieldError(field, "is required and must be non-empty text")
        return ""
    if not isinstance(value, str):
        raise FieldError(field, f"must be text, got {type(value).__name__} {value!r:.40}")
    return value


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
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            raise FieldError(field, f"must be a number, got {value!r:.40}") from None
    else:
        raise FieldError(field, f"must be a number, got {type(value).__name__}")
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
    """Return a JSON-looking CSV cell decoded; other values unchanged."""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("[", "{"):
            try:
                return json.loads(text)
            except json.JSONDecodeError as error:
                raise FieldError(field, f"holds malformed JSON ({error.msg}, column {error.colno})") from None
    return value


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
    out = []
    for i, item in enumerate(items):
        if isinstance(item, bool) or not isinstance(item, (str, int)) or (isinstance(item, str) and not item.strip()):
            raise FieldError(f"{field}[{i}]", f"must be a non-empty id (string or integer), got {item!r:.40}")
        out.append(str(item))
    return out


def as_dict(value: Any, field: str) -> dict:
    if is_blank(value):
        return {}
    value = decoded(value, field)
    if not isinstance(value, dict):
        raise FieldError(field, f"must be an object (a JSON {{...}}), got {type(value).__name__}")
    return value


def json_safe(value: Any) -> Any:
    """Return a value that serializes to JSON (numpy scalars and arrays become Python)."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value

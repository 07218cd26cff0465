"""What the tool adapters share: reading a value that may be text or an object, and a verdict as a number."""

from __future__ import annotations

import hashlib
import math
from typing import Any

from ..fields import FieldError, as_list, as_number, as_text, is_blank, object_in_text

#: Keys a question's text is read from when a tool keeps it in an object (Langfuse ``input``, LangSmith ``inputs``).
TEXT_KEYS = ("question", "query", "input", "user_input", "prompt", "text")
ANSWER_KEYS = ("answer", "output", "reference", "expected_output", "expected_response", "response", "text")
#: Keys under which a tool keeps a question's id (ours, carried in its metadata).
ID_KEYS = ("question_id", "qid", "id")


def text_id(text: str) -> str:
    """The id a question without one gets from its text (the same text, the same id, on every import)."""
    return "q-" + hashlib.sha1(text.encode()).hexdigest()[:12]


def text_of(value: Any, field: str, keys: tuple[str, ...], *, required: bool = False) -> str:
    """Text from a string, or from an object holding it under one of ``keys`` (or its only text value)."""
    value = object_in_text(value)
    if isinstance(value, dict):
        for key in keys:
            if isinstance(value.get(key), str):
                return as_text(value[key], f"{field}.{key}", required=required)
        texts = [k for k, v in value.items() if isinstance(v, str)]
        if len(texts) == 1:
            return as_text(value[texts[0]], f"{field}.{texts[0]}", required=required)
        raise FieldError(
            field,
            f"is an object with keys {sorted(value)[:8]}; name the text under one of {', '.join(keys)}",
        )
    return as_text(value, field, required=required)


def first(data: dict[str, Any], *names: str) -> Any:
    """The first of ``names`` that ``data`` holds a value under (blank values do not count)."""
    return next((data[name] for name in names if not is_blank(data.get(name))), None)


def an_object(value: Any) -> dict[str, Any]:
    """A value that should be an object (an object as JSON text too); anything else is an empty one."""
    value = object_in_text(value)
    return value if isinstance(value, dict) else {}


def id_in(*places: Any) -> Any:
    """Our question id, where a tool keeps it (``question_id``, ``qid`` or ``id`` of its metadata)."""
    for place in places:
        if isinstance(place, dict):
            found = first(place, *ID_KEYS)
            if found is not None:
                return found
    return None


def chunks(value: Any, field: str) -> list[str] | None:
    """A list of context texts, or None when the value is not a list (one text, or nothing)."""
    if is_blank(value) or (isinstance(value, str) and not value.strip().startswith("[")):
        return None
    return [as_text(c if isinstance(c, str) else text_of(c, f"{field}[{i}]", ("page_content", "content", "text")),
                    f"{field}[{i}]") for i, c in enumerate(as_list(value, field))]  # fmt: skip


#: Verdicts tools write as words: Inspect's CORRECT/INCORRECT/PARTIAL/NOANSWER, MLflow's yes/no, booleans.
_WORDS = {"c": 1.0, "i": 0.0, "p": 0.5, "n": 0.0, "yes": 1.0, "no": 0.0, "true": 1.0, "false": 0.0,
          "pass": 1.0, "fail": 0.0, "correct": 1.0, "incorrect": 0.0}  # fmt: skip


def verdict_number(value: Any, field: str) -> float | None:
    """A score as a number: numbers as they are, booleans 1/0, and the verdict words tools use (``C``, ``yes``)."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, str) and value.strip().lower() in _WORDS:
        return _WORDS[value.strip().lower()]
    if isinstance(value, float) and math.isnan(value):
        return None
    return as_number(value, field)

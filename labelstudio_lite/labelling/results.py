"""Results that cross modules: frozen dataclasses that turn into JSON-ready data with one rule.

A result class mixes in :class:`Result` and gets ``as_dict()``: its fields by name, nested results
as their own ``as_dict()``, tuples as lists, enum members as their values. A result whose JSON
differs from its fields (left-out keys, NaN as null) overrides ``as_dict`` and says why.
"""

from __future__ import annotations

from dataclasses import fields
from enum import Enum
from typing import Any


def json_ready(value: Any) -> Any:
    """``value`` as data ``json.dumps`` takes: results as dicts, tuples as lists, enum members as their values."""
    if isinstance(value, Result):
        return value.as_dict()
    if isinstance(value, list | tuple):
        return [json_ready(v) for v in value]
    if isinstance(value, dict):
        return {json_ready(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, Enum):
        return value.value
    return value


class Result:
    """Mix into a frozen dataclass: ``as_dict()`` gives its fields, JSON-ready (see :func:`json_ready`)."""

    def as_dict(self) -> dict[str, Any]:
        return {f.name: json_ready(getattr(self, f.name)) for f in fields(self)}

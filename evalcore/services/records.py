"""A record read from an import file: its fields and the line (or row) it starts on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Record:
    line: int
    data: dict[str, Any]

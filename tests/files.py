"""Write test input files: JSON Lines and CSV (one helper for every test folder)."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any


def write_jsonl(path: Path, records: Iterable[Any]) -> Path:
    """Write one record a line; a string is written as it is (to write malformed lines)."""
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write((record if isinstance(record, str) else json.dumps(record)) + "\n")
    return path


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[Any]], *, json_cells: bool = False) -> Path:
    """Write a CSV file; with ``json_cells`` list and dict cells are written as JSON text."""
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for row in rows:
            writer.writerow([json.dumps(v) if json_cells and isinstance(v, (list, dict)) else v for v in row])
    return path

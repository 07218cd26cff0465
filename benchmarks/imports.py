"""``python -m benchmarks imports [--n N]``: what reading the tools' formats costs, as ratios to the format
it replaces, measured side by side in the same run.

- a JSON array against the same records as JSON Lines (the array is parsed record by record from one text);
- list cells as numpy and Python write them against JSON cells (each is tried after JSON fails);
- telling a JSON array's format from its content against telling it from its extension.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from ._common import fmt_ratio, fmt_time, print_table, side_by_side


def _django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labelstudio_lite.settings")
    import django

    django.setup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks imports", description=__doc__)
    parser.add_argument("--n", type=int, default=100_000, help="records in the files (default 100,000)")
    args = parser.parse_args(argv)
    _django()
    from evalcore.services.fields import parse_list_cell
    from evalcore.services.problems import ProblemCollector
    from evalcore.services.readers import detect_format, read_records

    folder = Path(tempfile.mkdtemp())
    records = [
        {"id": f"q{i}", "question": f"What is {i}?", "gold": [{"doc": f"d{i}", "grade": 1}], "tags": ["a", "b"]}
        for i in range(args.n)
    ]
    lines, array = folder / "q.jsonl", folder / "q.json"
    lines.write_text("".join(json.dumps(r) + "\n" for r in records))
    array.write_text(json.dumps(records, indent=1))

    def read(path: Path) -> int:
        return sum(1 for _ in read_records(path, "jsonl", path.name, problems=ProblemCollector(path.name)))

    files = side_by_side({"jsonl": lambda: read(lines), "array": lambda: read(array)})
    ids = [f"doc{i:05d}#{j}" for i in range(10_000) for j in range(3)]
    triples = [ids[i : i + 3] for i in range(0, len(ids), 3)]
    cells = {
        "json": [json.dumps(t) for t in triples],
        "python": [repr(t) for t in triples],
        "numpy": ["[" + " ".join(repr(x) for x in t) + "]" for t in triples],
    }
    parsed = side_by_side({kind: (lambda c=c: [parse_list_cell(x, "f") for x in c]) for kind, c in cells.items()})
    detect = side_by_side(
        {"name": lambda: detect_format(array), "content": lambda: detect_format(array, door="questions")}, repeats=5
    )
    print_table(
        f"Reading the tools' formats ({args.n:,} records; 10,000 list cells of 3 ids)",
        ["what", "time", "reference", "ratio"],
        [
            [
                "JSON array vs JSON Lines",
                fmt_time(files["array"]),
                fmt_time(files["jsonl"]),
                fmt_ratio(files["array"] / files["jsonl"]),
            ],
            [
                "Python list cells vs JSON",
                fmt_time(parsed["python"]),
                fmt_time(parsed["json"]),
                fmt_ratio(parsed["python"] / parsed["json"]),
            ],
            [
                "numpy list cells vs JSON",
                fmt_time(parsed["numpy"]),
                fmt_time(parsed["json"]),
                fmt_ratio(parsed["numpy"] / parsed["json"]),
            ],
            [
                "format from content vs name",
                fmt_time(detect["content"]),
                fmt_time(detect["name"]),
                fmt_ratio(detect["content"] / detect["name"]),
            ],
        ],
        notes=["best of 3 interleaved runs each; ratios are what to compare across machines"],
    )
    return 0

"""The eval set import at two sizes side by side: its peak resident memory must not grow with the file.

    python -m benchmarks evalset [--rows 1000000] [--db sqlite|postgres|both] [--keep DIR]

Writes an eval set of ``--rows`` questions with graded gold (the scale benchmark's questions file,
:mod:`benchmarks.scale_data`) and one of a tenth of them, then, for each size and database, imports it
in a fresh process on a fresh database (SQLite: a file in a temporary folder; PostgreSQL: a throwaway
``lsl_bench_evalset_<pid>`` database, dropped at the end) through the service the command, the upload
page and the Celery job call. Prints questions a second and the process's peak resident memory
(``getrusage``: Django, the migrations and the import), with the import's own rise above where it
started (sampled every 20 ms).

Target (issue 23): the peak at ``--rows`` within 1.2x of the peak at a tenth of it, and under 400 MB.
This is a benchmark, not a test: it prints figures and exits 0 unless something failed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PG_ADMIN_URL = os.environ.get("LSL_BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432")
RATIO_TARGET = 1.2
PEAK_TARGET = 400 * 2**20


def _inner(path: Path) -> dict[str, Any]:
    """Inside the project's Django: migrate, import the file once; return the figures."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labelstudio_lite.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from evalcore.services.evalsets import evalset_import

    from .scale import PeakRss

    call_command("migrate", verbosity=0)
    with PeakRss() as memory:
        started = time.perf_counter()
        result = evalset_import(path=path, name="scale")
        elapsed = time.perf_counter() - started
    return {
        "questions": result.version.question_count,
        "seconds": elapsed,
        "added": memory.added,
        "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


def _fmt_mb(nbytes: float) -> str:
    return f"{nbytes / 2**20:,.0f} MB"


def _run(db: str, path: Path, folder: Path) -> dict[str, Any]:
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "VAR_DIR": str(folder), "DEBUG": "0"}
    env.pop("CELERY_BROKER_URL", None)
    pg_name = f"lsl_bench_evalset_{os.getpid()}"
    if db == "sqlite":
        env["DATABASE_URL"] = f"sqlite:///{folder / 'bench.sqlite3'}"
    else:
        subprocess.run(["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", pg_name], check=True)
        subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", pg_name], check=True)
        env["DATABASE_URL"] = f"{PG_ADMIN_URL}/{pg_name}"
    try:
        child = subprocess.run(
            [sys.executable, "-m", "benchmarks", "evalset", "--inner", str(path)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
    finally:
        if db == "postgres":
            subprocess.run(["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", pg_name])
    line = next((x for x in child.stdout.splitlines() if x.startswith("RESULT ")), None)
    if child.returncode != 0 or line is None:
        raise SystemExit(f"{db}: the import of {path.name} failed:\n{child.stdout[-3000:]}\n{child.stderr[-3000:]}")
    return json.loads(line[len("RESULT ") :])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks evalset", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="questions in the big file (default 1,000,000)")
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="sqlite")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temporary one)")
    parser.add_argument("--inner", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inner:
        print("RESULT " + json.dumps(_inner(args.inner)))
        return 0
    from .scale_data import write_questions_file

    print(f"eval set import: {args.rows:,} questions; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    top = args.keep or Path(tempfile.mkdtemp(prefix="lsl-bench-evalset-"))
    sizes = (max(1, args.rows // 10), args.rows)
    ok = True
    try:
        files = {n: write_questions_file(top / f"questions-{n}.jsonl", n) for n in sizes}
        for db in ("sqlite", "postgres") if args.db == "both" else (args.db,):
            figures = {n: _run(db, files[n], top / f"{db}-{n}") for n in sizes}
            small, big = (figures[n] for n in sizes)
            print(f"\n{db}: {'':22}{sizes[0]:>12,} questions  {sizes[1]:>12,} questions  ratio")
            rates = [figures[n]["questions"] / figures[n]["seconds"] for n in sizes]
            print(f"  questions a second    {rates[0]:>22,.0f}  {rates[1]:>22,.0f}  {rates[1] / rates[0]:5.2f}")
            print(
                f"  peak resident memory  {_fmt_mb(small['peak']):>22}  {_fmt_mb(big['peak']):>22}"
                f"  {big['peak'] / small['peak']:5.2f}"
            )
            print(f"  of which the import   {_fmt_mb(small['added']):>22}  {_fmt_mb(big['added']):>22}")
            for passed, text in (
                (
                    big["peak"] < RATIO_TARGET * small["peak"],
                    f"{db}: peak {_fmt_mb(big['peak'])} at {sizes[1]:,}, {_fmt_mb(small['peak'])} at {sizes[0]:,} "
                    f"(target < {RATIO_TARGET}x; issue 23)",
                ),
                (big["peak"] < PEAK_TARGET, f"{db}: peak {_fmt_mb(big['peak'])} (target < 400 MB; issue 23)"),
            ):
                ok = ok and passed
                print(f"{'PASS' if passed else 'MISS'}  {text}")
    finally:
        if not args.keep:
            shutil.rmtree(top, ignore_errors=True)
    return 0 if ok else 0


if __name__ == "__main__":
    sys.exit(main())

"""Two 100,000-row runs end to end: imports, the gate, and the pages that read them.

    python -m benchmarks scale [--rows 100000] [--db sqlite|postgres|both] [--quick] [--keep DIR]

For each database it prepares a fresh one (SQLite: a file in a temporary folder; PostgreSQL: a
throwaway ``lsl_bench_scale_<pid>`` database, dropped at the end), migrates it and, in a
subprocess with the real settings (``DEBUG=0``, Celery eager as in the embedded mode):

* imports an eval set of ``--rows`` questions and two runs of as many rows (files from
  :mod:`benchmarks.scale_data`, about 1.1 KB a row: ten metrics, twenty question types),
  through the import service the command and the upload page call; prints rows a second and the
  process's peak resident memory (sampled every 20 ms) side by side with the same import of a tenth
  of the file (``--rows 1000000``: 100,000 and 1,000,000 rows; flat memory: about the same peak);
* runs ``manage.py gate --json`` on the two runs as CI does (a fresh process, ten metrics, every
  question type as a slice: 10 x 21 decisions of 10,000 resamples), end to end;
* serves the comparison page, its list of changed rows, the rows page and the API's first pages
  with Django's test client, logged in as an eval owner, after one warm-up request to another page
  (a process's first request loads templates and code once): each page's first request and the
  best of three more, with the SQL queries each took.

Targets (issues 15 and 23): each first page under 500 ms (deep pages are printed as information), the gate under 5 s,
imports at 2,000 rows a second or more (10,000 on PostgreSQL) with a peak within 1.2x of a tenth of the file's and
under 400 MB. On PostgreSQL it then measures labelling under an import of the same size (20 annotators through the
API while ``manage.py import_run`` imports the base file again, see :mod:`benchmarks.scale_labelling`; target: next
and submit p95 under 300 ms; ``--no-labelling`` skips it). This is a benchmark, not a test: it prints figures and
exits 0 unless something failed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from .scale_labelling import labelling_under_import, report_labelling

ROOT = Path(__file__).resolve().parent.parent
PG_ADMIN_URL = os.environ.get("LSL_BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432")
PAGE_TARGET = 0.5  # seconds
GATE_TARGET = 5.0  # seconds, for two runs of GATE_TARGET_ROWS (issue 15)
GATE_TARGET_ROWS = 100_000
IMPORT_TARGET = 2000.0  # rows a second
PG_IMPORT_TARGET = 10_000.0  # rows a second on PostgreSQL (COPY), issue 23
#: Pages printed beside the targets (which are about first pages), not held to them: the rows page's page 1000
#: skips every row before it; the changed rows' page 2 is the first page past what the comparison kept, so its
#: first request computes the order from both score tables and keeps it in blocks, once (issue 23). Deeper
#: changed-rows pages then read the kept header and one block: they are held to the target, at any depth.
DEEP_PAGES = ("changed rows, page 2 (keeps the order)", "rows page, page 1000")


class PeakRss:
    """The peak resident memory of this process while the block runs, above where it started (sampled)."""

    def __init__(self, every: float = 0.02) -> None:
        self.every = every
        self.peak = 0
        self.start = 0

    @staticmethod
    def rss() -> int:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def __enter__(self) -> PeakRss:
        self.start = self.peak = self.rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(self.every):
            self.peak = max(self.peak, self.rss())

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.rss())

    @property
    def added(self) -> int:
        return self.peak - self.start


def _inner(db: str, folder: Path, rows: int) -> dict[str, Any]:
    """Inside the project's Django: import, gate and serve; return the figures."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labelstudio_lite.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection, reset_queries
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from evalcore.models import Comparison, Run
    from evalcore.services.evalsets import evalset_import
    from evalcore.services.runs import run_import
    from labelstudio_lite.accounts.models import User

    from .scale_data import write_scale_files

    call_command("migrate", verbosity=0)
    files = write_scale_files(folder / "files", rows)
    out: dict[str, Any] = {"db": db, "rows": rows}
    started = time.perf_counter()
    evalset_import(path=files["questions"], name="scale")
    out["evalset_s"] = time.perf_counter() - started

    tenth = folder / "files" / "tenth.jsonl"
    with files["base"].open() as source, tenth.open("w") as target:
        for _, line in zip(range(max(1, rows // 10)), source):
            target.write(line)
    with PeakRss() as small:
        started = time.perf_counter()
        run_import(path=tenth, evalset="scale", name="tenth", k=5)
        out["import_tenth_s"] = time.perf_counter() - started
    out["import_tenth_peak"] = small.added
    out["import_tenth_rss"] = small.peak
    for name in ("base", "cand"):
        with PeakRss() as memory:
            started = time.perf_counter()
            result = run_import(path=files[name], evalset="scale", name=name, k=5)
            elapsed = time.perf_counter() - started
        assert result.run.row_count == rows, result.message
        out[f"import_{name}_s"] = elapsed
        out[f"import_{name}_peak"] = memory.added
        out[f"import_{name}_rss"] = memory.peak

    env = {**os.environ, "DEBUG": "0"}
    started = time.perf_counter()
    gate = subprocess.run(
        [sys.executable, "manage.py", "gate", "--base", "base", "--candidate", "cand", "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    out["gate_s"] = time.perf_counter() - started
    if gate.returncode not in (0, 3, 4):
        raise SystemExit(f"gate failed ({gate.returncode}): {gate.stderr[-2000:]}")
    report = json.loads(gate.stdout)
    out["gate_decisions"] = len(report["decisions"])
    out["gate_overall"] = report["overall"]

    owner = User.objects.create_user("bench-scale-owner", password="bench-owner-pass", role="eval_owner")
    client = Client()
    client.force_login(owner)
    comparison = Comparison.objects.latest("id")
    base = Run.objects.get(name="base")
    metric = comparison.metrics[0]
    last_page = max(1, -(-int(((comparison.changed or {}).get(metric) or {}).get("count", 0)) // 50))
    pages = {
        "comparison page": f"/comparisons/{comparison.pk}/",
        "changed rows, page 1": f"/comparisons/{comparison.pk}/changed/?metric={metric}",
        "changed rows, page 2 (keeps the order)": f"/comparisons/{comparison.pk}/changed/?metric={metric}&page=2",
        "changed rows, page 100": f"/comparisons/{comparison.pk}/changed/?metric={metric}&page=100",
        "changed rows, last page": f"/comparisons/{comparison.pk}/changed/?metric={metric}&page={last_page}",
        "rows page": f"/runs/{base.pk}/rows/",
        "rows page, one slice": f"/runs/{base.pk}/rows/?type=type-03",
        "rows page, page 1000": f"/runs/{base.pk}/rows/?page=1000",
        "API comparison": f"/api/comparisons/{comparison.pk}/",
        "API changed rows": f"/api/comparisons/{comparison.pk}/changed/?metric={metric}",
        "API rows": f"/api/runs/{base.pk}/rows/",
    }
    client.get("/runs/")  # the process's first request loads templates and code once: not a page's cost
    out["pages"] = {}
    for label, url in pages.items():
        times = []
        for _ in range(4):
            reset_queries()
            with CaptureQueriesContext(connection) as queries:
                started = time.perf_counter()
                response = client.get(url)
                times.append(time.perf_counter() - started)
            if response.status_code != 200:
                raise SystemExit(f"{url} answered {response.status_code}")
        out["pages"][label] = {"cold": times[0], "best": min(times[1:]), "queries": len(queries)}
    return out


def _fmt_mb(nbytes: float) -> str:
    return f"{nbytes / 2**20:,.0f} MB"


def _report(results: list[dict[str, Any]]) -> bool:
    ok = True

    def check(passed: bool, text: str) -> None:
        nonlocal ok
        ok = ok and passed
        print(f"{'PASS' if passed else 'MISS'}  {text}")

    for r in results:
        rows = r["rows"]
        print(f"\n{r['db']}: two runs of {rows:,} rows")
        print(f"  eval set import: {r['evalset_s']:.1f} s ({rows / r['evalset_s']:,.0f} questions/s)")
        tenth = max(1, rows // 10)
        print(f"  run import, side by side:  {tenth:>11,} rows (a tenth)  {rows:>11,} rows (base)  ratio")
        print(
            f"    rows a second          {tenth / r['import_tenth_s']:>20,.0f}  {rows / r['import_base_s']:>18,.0f}"
            f"  {(rows / r['import_base_s']) / (tenth / r['import_tenth_s']):5.2f}"
        )
        print(
            f"    peak resident memory   {_fmt_mb(r['import_tenth_rss']):>20}  {_fmt_mb(r['import_base_rss']):>18}"
            f"  {r['import_base_rss'] / r['import_tenth_rss']:5.2f}"
        )
        print(f"    of which the import    {_fmt_mb(r['import_tenth_peak']):>20}  {_fmt_mb(r['import_base_peak']):>18}")
        print(
            f"  run import (cand): {r['import_cand_s']:.1f} s = {rows / r['import_cand_s']:,.0f} rows/s; "
            f"peak {_fmt_mb(r['import_cand_rss'])}"
        )
        print(
            f"  gate --json, {r['gate_decisions']} decisions, end to end: {r['gate_s']:.2f} s (overall {r['gate_overall']})"
        )
        width = max(len(label) for label in r["pages"])
        for label, page in r["pages"].items():
            print(
                f"  {label.ljust(width)}  first {page['cold'] * 1000:7.1f} ms  best {page['best'] * 1000:7.1f} ms  "
                f"{page['queries']:2d} queries"
            )
    for r in results:
        if "labelling" in r:
            report_labelling(r["labelling"], check, reference=r.get("labelling_reference"))
        if "labelling_failed" in r:
            check(False, f"{r['db']}: labelling under an import failed: {r['labelling_failed']}")
    print("\nTargets (issues 15 and 23):")
    for r in results:
        db, rows = r["db"], r["rows"]
        rate = min(rows / r["import_base_s"], rows / r["import_cand_s"])
        target = PG_IMPORT_TARGET if db == "postgres" else IMPORT_TARGET
        check(rate >= target, f"{db}: run import {rate:,.0f} rows/s (target >= {target:,.0f})")
        peak, tenth = max(r["import_base_rss"], r["import_cand_rss"]), r["import_tenth_rss"]
        check(
            peak < 1.2 * tenth,
            f"{db}: import memory flat: peak {_fmt_mb(peak)} for the file, {_fmt_mb(tenth)} for a tenth of it "
            f"(target < 1.2x; issue 23)",
        )
        check(peak < 400 * 2**20, f"{db}: import peak {_fmt_mb(peak)} (target < 400 MB; issue 23)")
        gate = f"{db}: gate 10 metrics x 20 slices x {rows:,}: {r['gate_s']:.2f} s"
        if rows <= GATE_TARGET_ROWS:
            check(r["gate_s"] < GATE_TARGET, f"{gate} (target < {GATE_TARGET:.0f} s)")
        else:  # issue 15 set the target for two runs of 100,000 rows; beyond, the time is printed, not judged
            print(f"info  {gate} (the < {GATE_TARGET:.0f} s target is for {GATE_TARGET_ROWS:,} rows)")
        for label, page in r["pages"].items():
            worst = max(page["cold"], page["best"])
            if label in DEEP_PAGES:  # not a target: see DEEP_PAGES
                print(f"info  {db}: {label}: {worst * 1000:.0f} ms")
                continue
            check(worst < PAGE_TARGET, f"{db}: {label}: {worst * 1000:.0f} ms (target < {PAGE_TARGET * 1000:.0f} ms)")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--quick", action="store_true", help="10,000 rows: a smoke test, not the figures")
    parser.add_argument("--no-labelling", action="store_true", help="skip labelling under an import (PostgreSQL)")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temporary one)")
    parser.add_argument("--inner", nargs=3, metavar=("DB", "FOLDER", "ROWS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inner:
        db, folder, rows = args.inner
        print("RESULT " + json.dumps(_inner(db, Path(folder), int(rows))))
        return 0
    rows = 10_000 if args.quick else args.rows
    print(f"scale benchmark: {rows:,} rows a run; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    top = args.keep or Path(tempfile.mkdtemp(prefix="lsl-bench-scale-"))
    results = []
    try:
        for db in ("sqlite", "postgres") if args.db == "both" else (args.db,):
            folder = top / db
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            env = {**os.environ, "VAR_DIR": str(folder), "DEBUG": "0"}
            env.pop("CELERY_BROKER_URL", None)
            pg_name = f"lsl_bench_scale_{os.getpid()}"
            if db == "sqlite":
                env["DATABASE_URL"] = f"sqlite:///{folder / 'bench.sqlite3'}"
            else:
                subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", pg_name], check=True)
                env["DATABASE_URL"] = f"{PG_ADMIN_URL}/{pg_name}"
            try:
                child = subprocess.run(
                    [sys.executable, "-m", "benchmarks", "scale", "--inner", db, str(folder), str(rows)],
                    cwd=ROOT,
                    env=env,
                    capture_output=True,
                    text=True,
                )
                line = next((x for x in child.stdout.splitlines() if x.startswith("RESULT ")), None)
                if child.returncode != 0 or line is None:
                    print(child.stdout[-3000:], child.stderr[-3000:])
                    return 1
                results.append(json.loads(line[len("RESULT ") :]))
                if db == "postgres" and not args.no_labelling:
                    print("  postgres: labelling under an import ...", flush=True)
                    try:
                        # the reference first, in the same run: the import at the web's priority (JOB_NICENESS=0)
                        for key, niceness in (("labelling_reference", 0), ("labelling", None)):
                            results[-1][key] = labelling_under_import(
                                env["DATABASE_URL"], folder, folder / "files" / "base.jsonl", rows, niceness=niceness
                            )
                    except (SystemExit, Exception) as error:  # noqa: BLE001 - the figures taken are still reported
                        print(f"  postgres: labelling under an import failed: {error}", flush=True)
                        results[-1]["labelling_failed"] = str(error)[-500:]
            finally:
                if db == "postgres" and not args.keep:
                    subprocess.run(["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", pg_name])
            print(f"  {db}: done", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(top, ignore_errors=True)
    _report(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())

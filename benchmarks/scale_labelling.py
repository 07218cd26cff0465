"""Labelling under a big import (issue 23): 20 annotators label through the API while a run of the scale
benchmark's size is imported into the same PostgreSQL database.

Called by :mod:`benchmarks.scale` on its PostgreSQL database once its own figures are taken: the labelling
benchmark's campaigns are prepared there (:func:`benchmarks.labelling._prepare`: the demo run, claim
campaigns with the annotators assigned), gunicorn serves the project (4 workers of 4 threads, ``DEBUG=0``),
and ``manage.py import_run`` imports the benchmark's base file again as a new run while the annotators label:
first at a reading pace (``think`` seconds an item on average), then flat out, each flow to the end of its campaign
(a flow started is not cut short) and no flow started once the import has ended. Only the
requests answered while the import ran are counted: ``next`` and ``submit``, server time (``Server-Timing``)
and round trip, median and p95. The target: p95 under 300 ms.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from . import labelling as lab

TARGET_P95_MS = 300.0


def labelling_under_import(
    db_url: str,
    folder: Path,
    rows_file: Path,
    rows: int,
    *,
    annotators: int = 20,
    items: int = 1000,
    think: float = 1.0,
    niceness: int | None = None,
) -> dict[str, Any]:
    """Run the annotators while ``rows_file`` is imported; return the import's time and the latencies.

    ``niceness``: the import job's ``JOB_NICENESS`` (None: the project's default). Each call prepares annotators
    and campaigns of its own, so a second call in the same database measures afresh."""
    tag = "default" if niceness is None else f"nice{niceness}"
    workdir = folder / f"labelling-{tag}"
    workdir.mkdir(parents=True, exist_ok=True)
    # the command honours the upload limit (512 MiB by default): a 1,000,000-row file is about 1.1 GB
    extra = {"UPLOAD_MAX_BYTES": str(8 * 2**30)} | ({} if niceness is None else {"JOB_NICENESS": str(niceness)})
    env = lab.project_env(lab.Database("postgres", db_url), workdir, **extra)
    spec = {"annotators": annotators, "items": items, "solo_items": 5, "prefix": f"{tag}-"}
    setup = lab.internal_call("prepare", spec, env, workdir)
    camp = {key: info["name"] for key, info in setup["campaigns"].items()}
    crowd = [(name, setup["tokens"][name]) for name in setup["annotators"]]
    server = lab.Server(env, 4, 4, workdir)
    log = (workdir / "import.log").open("w")
    try:
        warm = lab.Client(server.port, lab.Tally())
        for _ in range(16):  # every worker process imports its code and opens its connection once
            warm.request(None, "GET", "/accounts/login/")
        warm.close()
        started = time.monotonic()
        timer = ["/usr/bin/time", "-f", "peak-rss-kib %M"] if Path("/usr/bin/time").exists() else []
        importer = subprocess.Popen(
            [
                *timer,
                sys.executable,
                "manage.py",
                "import_run",
                "--evalset",
                "scale",
                "--name",
                f"under-labelling-{tag}",
            ]
            + ["--k", "5", "--quiet", str(rows_file)],
            cwd=lab.ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        finished: list[float] = []
        watcher = threading.Thread(target=lambda: (importer.wait(), finished.append(time.monotonic())), daemon=True)
        watcher.start()
        flows = []
        for key, pace in (("paced-api", think), ("crowd-api", 0.0)):
            if importer.poll() is not None:
                break
            flows.append(lab.run_flow("api", server.port, camp[key], crowd, "api", pace))
        watcher.join()
        ended = finished[0]
    finally:
        server.stop()
        log.close()
    if importer.returncode != 0:
        raise SystemExit(f"the import under labelling failed: {(workdir / 'import.log').read_text()[-2000:]}")
    peak = re.search(r"peak-rss-kib (\d+)", (workdir / "import.log").read_text())
    samples = [s for flow in flows for s in flow.tally.samples if started <= s.at <= ended]
    errors = [error for flow in flows for error in flow.tally.errors]
    out: dict[str, Any] = {
        "import_s": ended - started,
        "import_peak": int(peak.group(1)) * 1024 if peak else None,  # the command's whole process, Django included
        "rows": rows,
        "niceness": niceness,
        "annotators": annotators,
        "labels": sum(flow.tally.labelled for flow in flows),
        "errors": errors[:10],
        "flows": [flow.label for flow in flows],
    }
    for endpoint in ("next", "submit"):
        out[endpoint] = lab.stats(samples, f"api {endpoint}")
    return out


def _niceness(result: dict[str, Any]) -> str:
    return "JOB_NICENESS default" if result.get("niceness") is None else f"JOB_NICENESS={result['niceness']}"


def report_labelling(result: dict[str, Any], check: Any, *, reference: dict[str, Any] | None = None) -> None:
    """Print the latencies under the import and check the target (``check(passed, text)``); with ``reference``
    (the same measured with the import at the web's priority, in the same run) first, and the ratios."""
    if reference is not None:
        _print_labelling(reference)
    _print_labelling(result)
    if reference is not None:
        for endpoint in ("next", "submit"):
            before, after = reference[endpoint]["client_p95"], result[endpoint]["client_p95"]
            print(
                f"  {endpoint} p95 round trip {_niceness(result)} / {_niceness(reference)}: {after / before:.2f} "
                f"({after:.0f} / {before:.0f} ms); import time {result['import_s'] / reference['import_s']:.2f}x"
            )
    for endpoint in ("next", "submit"):
        p95 = result[endpoint]["client_p95"]
        check(
            p95 < TARGET_P95_MS,
            f"postgres: {endpoint} p95 under a {result['rows']:,}-row import: {p95:.0f} ms round trip "
            f"(target < {TARGET_P95_MS:.0f} ms; issue 23)",
        )
    check(not result["errors"], f"postgres: labelling under the import: {len(result['errors'])} errors")


def _print_labelling(result: dict[str, Any]) -> None:
    print(
        f"\npostgres: labelling by {result['annotators']} annotators while a {result['rows']:,}-row run was imported "
        f"({_niceness(result)}; {result['import_s']:.0f} s by the command, "
        f"{result['rows'] / result['import_s']:,.0f} rows/s; {result['labels']} labels)"
    )
    if result.get("import_peak"):
        print(f"  the command's peak resident memory: {result['import_peak'] / 2**20:,.0f} MB (/usr/bin/time)")
    for endpoint in ("next", "submit"):
        figures = result[endpoint]
        print(
            f"  {endpoint:6s}  {figures['n']:5d} requests  server median {lab.fmt_ms(figures['server_median'])}  "
            f"p95 {lab.fmt_ms(figures['server_p95'])}  round trip median {lab.fmt_ms(figures['client_median'])}  "
            f"p95 {lab.fmt_ms(figures['client_p95'])}"
        )

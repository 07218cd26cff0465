"""The judge runner against a slow endpoint: throughput at a concurrency, beside the ideal and the serial time.

    python -m benchmarks judge [--claims 2000] [--latency 0.2] [--concurrency 32] [--quick]

The fake OpenAI-compatible judge (``evalcore.judging.fakeserver``) runs in its own process on a
free loopback port and answers each call after ``--latency`` seconds. The runner (the official
``openai`` async client, the rate limiter, schema validation, the cache written every half
second to a throwaway SQLite database) judges ``--claims`` distinct claims at ``--concurrency``:

* throughput against the ideal, ``concurrency / latency`` claims a second (160 at 32 and 200 ms);
  the target is 80 % of it;
* the serial time: a sample of claims judged one at a time, extrapolated to all of them;
* memory: the peak the runner allocates (tracemalloc) judging a quarter of the claims and all of
  them, in separate runs: flat means the second is not about four times the first.

Every run uses claims never seen before (the cache would answer the rest for free). This is a
benchmark, not a test: it prints figures and exits 0 unless a call failed.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_SHARE = 0.80


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_fake(latency: float) -> tuple[subprocess.Popen, str]:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "evalcore.judging.fakeserver", "--port", str(port), "--latency", str(latency)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return server, f"http://127.0.0.1:{port}/v1"
        except OSError:
            time.sleep(0.1)
    server.kill()
    raise SystemExit("the fake judge did not start")


def setup_django(folder: Path) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{folder / 'bench.sqlite3'}"
    os.environ["VAR_DIR"] = str(folder)
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labelstudio_lite.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def requests(prompts, label: str, n: int):  # type: ignore[no-untyped-def]
    """``n`` distinct claims, made lazily (memory holds none of them ahead of the runner)."""
    from evalcore.judging.prompts import ItemText

    for i in range(n):
        context = (f"Plan {label}{i} refunds within thirty days.", "Shipping is free.")
        claim = f"Plan {label}{i} refunds within {'thirty' if i % 3 else 'ninety'} days."
        yield prompts.verdict(
            ItemText(question=f"What does plan {label}{i} offer?", context=context, answer=claim, claim=claim)
        )


def judge(config, label: str, n: int, concurrency: int):  # type: ignore[no-untyped-def]
    from evalcore.judging.client import JudgeClient, Limits
    from evalcore.judging.prompts import Prompts
    from evalcore.judging.runner import CallStats, run_calls

    stats = CallStats()
    limits = Limits(concurrency=concurrency, max_retries=2, timeout_seconds=30)
    client = JudgeClient(config, api_key="not-needed", base_url=config.base_url, limits=limits)
    started, cpu = time.perf_counter(), time.process_time()
    failures = run_calls(config, requests(Prompts(config), label, n), stats=stats, client=client)
    stats.cpu_seconds = time.process_time() - cpu  # type: ignore[attr-defined]
    return time.perf_counter() - started, stats, failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks judge", description=__doc__.split("\n\n")[0])
    parser.add_argument("--claims", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the fake judge takes per call")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--serial-sample", type=int, default=25, help="claims judged one at a time")
    parser.add_argument("--quick", action="store_true", help="400 claims: a smoke test, not the figures")
    args = parser.parse_args(argv)
    claims = 400 if args.quick else args.claims
    folder = Path(tempfile.mkdtemp(prefix="lsl-bench-judge-"))
    setup_django(folder)
    server, base_url = start_fake(args.latency)
    try:
        from evalcore.services.judge_configs import judge_config_create

        config = judge_config_create(
            raw={
                "name": "bench-judge",
                "endpoint_kind": "vllm",
                "base_url": base_url,
                "model": "fake-judge",
                "prompt": "Is the claim supported by the context?\nContext:\n{context}\nClaim: {claim}",
                "max_tokens": 100,
            }
        ).config
        ideal_rate = args.concurrency / args.latency
        print(
            f"judge runner: {claims:,} claims, fake judge answering in {args.latency * 1000:.0f} ms, "
            f"concurrency {args.concurrency} (ideal {ideal_rate:.0f} claims/s); {os.cpu_count()} CPUs, "
            f"load average {os.getloadavg()[0]:.1f}"
        )
        elapsed, stats, failures = judge(config, "t", claims, args.concurrency)
        rate = claims / elapsed
        serial_elapsed, _, serial_failures = judge(config, "s", args.serial_sample, 1)
        serial_total = serial_elapsed / args.serial_sample * claims
        quarter = max(1, claims // 4)
        tracemalloc.start()
        _, peak_quarter = _peak(lambda: judge(config, "m", quarter, args.concurrency))
        _, peak_all = _peak(lambda: judge(config, "n", claims, args.concurrency))
        tracemalloc.stop()
    finally:
        server.terminate()
        server.wait(timeout=10)
    share = rate / ideal_rate
    print(f"  concurrent: {elapsed:6.1f} s  {rate:6.1f} claims/s  = {share:.0%} of the ideal {ideal_rate:.0f} claims/s")
    print(
        f"  serial:     {serial_total:6.1f} s  (measured on {args.serial_sample} claims one at a time: "
        f"{serial_elapsed / args.serial_sample * 1000:.0f} ms a claim); concurrent is {serial_total / elapsed:.1f}x faster"
    )
    print(
        f"  memory (peak the runner allocates): {peak_quarter / 1e6:.1f} MB for {quarter:,} claims, "
        f"{peak_all / 1e6:.1f} MB for {claims:,} ({peak_all / max(peak_quarter, 1):.2f}x for 4x the claims)"
    )
    print(
        f"  runner CPU {stats.cpu_seconds:.1f} s ({stats.cpu_seconds / claims * 1000:.1f} ms a claim: "  # type: ignore[attr-defined]
        f"{stats.cpu_seconds / elapsed:.0%} of one core); HTTP requests {stats.http_requests:,}, "  # type: ignore[attr-defined]
        f"tokens {stats.tokens:,}, failed {stats.failed}"
    )
    passed = share >= TARGET_SHARE
    print(f"{'PASS' if passed else 'MISS'}  throughput {share:.0%} of the ideal (target {TARGET_SHARE:.0%})")
    flat = peak_all < 2 * peak_quarter
    print(
        f"{'PASS' if flat else 'MISS'}  memory flat: {peak_all / max(peak_quarter, 1):.2f}x for 4x the claims (target < 2x)"
    )
    return 1 if failures or serial_failures else 0


def _peak(fn):  # type: ignore[no-untyped-def]
    import gc

    gc.collect()
    tracemalloc.reset_peak()
    before, _ = tracemalloc.get_traced_memory()
    result = fn()
    _, peak = tracemalloc.get_traced_memory()
    return result, max(0, peak - before)


if __name__ == "__main__":
    sys.exit(main())

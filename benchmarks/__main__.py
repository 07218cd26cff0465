"""``python -m benchmarks [bootstrap|retrieval|gate|gate_rules ...] [--quick]``: run the engine benchmarks.

``python -m benchmarks labelling ...``, ``python -m benchmarks judge ...``, ``python -m benchmarks imports`` and
``python -m benchmarks scale ...`` run the labelling endpoints, the judge runner, the readers of the tools' formats
and two 100,000-row runs end to end, and ``python -m benchmarks evalset ...`` the eval set import at two sizes, with
options of their own (``--help``)."""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np

SECTIONS = ("bootstrap", "retrieval", "gate", "gate_rules")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["labelling"]:  # the labelling endpoints over HTTP, with options of its own (--help)
        from .labelling import main as labelling_main

        return labelling_main(argv[1:])
    if argv[:1] == ["imports"]:  # reading the tools' formats, with options of its own (--help)
        from .imports import main as imports_main

        return imports_main(argv[1:])
    if argv[:1] == ["scale"]:  # two 100,000-row runs: imports, the gate and the pages, with options of its own (--help)
        from .scale import main as scale_main

        return scale_main(argv[1:])
    if argv[:1] == ["evalset"]:  # the eval set import at two sizes: its peak memory, with options of its own (--help)
        from .scale_evalset import main as evalset_main

        return evalset_main(argv[1:])
    if argv[:1] == ["judge"]:  # the judge runner against the fake judge, with options of its own (--help)
        from .judge import main as judge_main

        return judge_main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument(
        "sections",
        nargs="*",
        choices=[[], *SECTIONS],
        metavar="section",
        help=f"any of {', '.join(SECTIONS)} (default: all)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="smaller inputs and fewer repeats: a smoke test, not the figures"
    )
    args = parser.parse_args(argv)
    sections = args.sections or list(SECTIONS)

    from ._common import Targets

    print(
        f"evalcore engine benchmarks{' (--quick: smaller inputs, figures not representative)' if args.quick else ''}\n"
        f"python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} CPUs, "
        f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} at start"
    )
    targets = Targets()
    started = time.perf_counter()
    for section in sections:
        if section == "bootstrap":
            from . import bench_bootstrap as module
        elif section == "retrieval":
            from . import bench_retrieval as module
        elif section == "gate_rules":
            from . import gate_rules as module
        else:
            from . import bench_gate as module
        module.run(targets, quick=args.quick)
    print()
    print(
        f"Targets ({time.perf_counter() - started:.0f} s in all; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} at end):"
    )
    for passed, text in targets.lines:
        print(f"{'PASS' if passed else 'MISS'}  {text}")
    if not args.sections:  # all: the labelling endpoints too (python -m benchmarks labelling --help)
        from .labelling import main as labelling_main

        return labelling_main(["--quick"] if args.quick else [])
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``./dev mutate``: mutation testing of the engine's decision modules with mutmut (pinned: the ``mutate`` extra).

mutmut copies ``evalcore`` to ``mutants/``, rewrites every function of the listed modules so that each
mutant (``<`` for ``<=``, ``break`` for ``continue``, ``0.95`` for ``1.95``...) can be switched on alone,
records which tests call which function, and then runs, for each mutant, only the tests that call the
mutated function (fastest first, stopping at the first failure) from the engine test files below, in
forked processes. A mutant *survives* when every one of those tests still passes: a change of the code
that no test notices. A mutant that makes a test run past mutmut's time limit (an endless loop) counts as
killed; one that no test calls at all counts as a survivor.

What makes it fit in CI (measured on the 2-core CI machine, see :mod:`mutation.runner`): mutmut 3.8
started pytest afresh in every forked mutant (options, plugins, Django, collection: about 0.25 s of the
0.28 s a killed mutant took); here one pytest session collects the tests once and each fork runs its
mutant's items in it, so a killed mutant costs its first failing test (median 0.06 s). A survivor runs
every test that calls its function, so the cost of a run is mostly its survivors: the tests that kill
them are the speed-up too. The heavy simulation cases in :data:`SKIPPED_TESTS` do not run for mutants
(their cheap cases do). Nothing in the mutated code is excluded: error messages and JSON keys are
mutated like the rest and tests pin them (a message or a stored key is behaviour the app shows).

This prints the mutants per module (killed, survived, equivalent), every survivor with its diff, and
exits 1 when more than ``LSL_MUTATE_MAX_SURVIVAL`` percent (default 3) of the non-equivalent mutants of
all the modules together survive. Equivalent mutants (they cannot change any result: see
:mod:`mutation.equivalent`, each entry reviewed and with its reason) are not counted as survivors.

Options: ``--keep`` keeps ``mutants/`` (mutmut's copy of the code, its results) after the run and reuses
it in the next one (mutmut then re-tests only the functions that changed; ``.venv/bin/mutmut show NAME``
and ``browse`` read it); by default the run starts afresh and removes it at the end, so no second copy of
the code lies in the tree. ``--report`` prints the results of a run kept that way again, without running
anything (after reviewing an equivalent mutant, say). ``--module=NAME`` (repeatable, or a comma list such as
``--module=ppi,_ppi``; ``ppi`` and ``ppi.py`` alike) mutates only those modules and runs only their tests, so
one module's survivors can be worked on in minutes; the threshold then applies to them alone. Anything else
is passed to ``mutmut run`` (e.g. mutant names).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENGINE = Path("evalcore/engine")

#: The decision modules and the engine test files their mutants run (only those that call the mutated
#: function). A module or test file that does not exist (yet) is left out, so a new estimator is one line.
#: The seeded simulations (test_gate_simulation.py and the like) are left out on purpose: they take
#: seconds each and would be run in full for every survivor; the deterministic tests must kill.
MODULES: dict[str, tuple[str, ...]] = {
    "release_gate.py": (
        "test_gate.py",
        "test_gate_edges.py",
        "test_gate_family.py",
        "test_names.py",
        "test_spec_examples.py",
    ),
    "_gate_cells.py": ("test_gate.py", "test_gate_edges.py", "test_gate_family.py"),
    "_gate_frames.py": ("test_gate.py", "test_gate_edges.py", "test_gate_family.py"),
    "agreement.py": (
        "test_agreement.py",
        "test_agreement_inputs.py",
        "test_gate_edges.py",
        "test_stratified.py",
        "test_spec_examples.py",
    ),
    "proportions.py": ("test_proportions.py", "test_intervals.py", "test_spec_examples.py"),
    "paired_tests.py": ("test_paired_tests.py", "test_paired_tests_paths.py"),
    "paired_proportions.py": ("test_paired_proportions.py", "test_paired_proportions_edges.py"),
    "multiplicity.py": ("test_multiplicity.py", "test_gate_edges.py"),
    # the estimators being written (each mutated once it lands)
    "certificates.py": (
        "test_certificates.py",
        "test_certificate_fields.py",
        "test_certificate_more.py",
        "test_certificate_bounds.py",
    ),
    "alt_test.py": ("test_alt_test.py",),
    "ppi.py": ("test_ppi.py", "test_ppi_difference.py", "test_ppi_mean.py"),
    "_ppi.py": ("test_ppi.py", "test_ppi_difference.py", "test_ppi_kernels.py", "test_ppi_mean.py"),
}
#: Checked everywhere: argument validation shared by the modules.
COMMON_TESTS = ("test_validation.py",)
#: The most survivors allowed, in percent of the non-equivalent mutants of all modules together.
MAX_SURVIVAL_PERCENT = 3.0
#: Tests of those files that mutants do not run, each with why (deselected from every mutmut run: the
#: stats run that maps tests to functions, the clean run, the mutants). Heavy parametrised simulations keep
#: their cheap case: the same code at 100 pairs rather than 1,000 (a survivor runs every test that calls
#: its function, so one 1.3 s case costs seconds for each). Nothing here is the only test of a rule.
SKIPPED_TESTS: dict[str, str] = {
    **{
        f"tests/engine/test_paired_proportions.py::"
        f"test_a_pass_fail_change_of_exactly_minus_the_margin_passes_at_most_3_percent_of_the_time[{case}]": (
            "the exact pass rate at 300 and 1,000 pairs: the same computation as the 100-pair cases, which run"
        )
        for case in ("0.04-300", "0.04-1000", "0.1-300", "0.1-1000")
    },
    "tests/engine/test_paired_proportions.py::test_the_gate_passes_at_the_exact_rate_on_simulated_runs": (
        "1,500 seeded gates against the exact pass rate: the exact-rate cases check the same rule exactly"
    ),
    "tests/engine/test_names.py::test_the_status_strings_are_written_once_in_the_engine": (
        "reads the engine's source and calls no engine function, so it can kill no mutant (16 s of the stats run)"
    ),
}
#: pytest's options for every run (the engine needs no database; the slow cross-checks stay out).
PYTEST_ARGS = [
    "-m",
    "not slow",
    "-n",
    "0",
    "-p",
    "no:cacheprovider",
    "--no-header",
    "-W",
    "ignore",
    *(arg for test in SKIPPED_TESTS for arg in ("--deselect", test)),
]


def max_survival() -> float:
    raw = os.environ.get("LSL_MUTATE_MAX_SURVIVAL", "")
    if not raw:
        return MAX_SURVIVAL_PERCENT
    try:
        value = float(raw)
    except ValueError:
        raise SystemExit(f"LSL_MUTATE_MAX_SURVIVAL must be a percentage such as 3 or 2.5, got {raw!r}") from None
    if not 0 <= value <= 100:
        raise SystemExit(f"LSL_MUTATE_MAX_SURVIVAL must lie between 0 and 100, got {raw!r}")
    return value


def present_modules() -> list[str]:
    return [name for name in MODULES if (ROOT / ENGINE / name).is_file()]


def module_option(argv: list[str]) -> tuple[list[str] | None, list[str]]:
    """The ``--module`` names of ``argv`` (``None`` when there is none) and the other arguments, in order."""
    names: list[str] = []
    rest: list[str] = []
    given = False
    args = iter(argv)
    for arg in args:
        if arg == "--module":
            value = next(args, None)
            if value is None or value.startswith("-"):
                raise SystemExit("error: --module needs a module name, e.g. --module=ppi")
        elif arg.startswith("--module="):
            value = arg.removeprefix("--module=")
        else:
            rest.append(arg)
            continue
        given = True
        names.extend(name.strip() for name in value.split(",") if name.strip())
    if given and not names:
        raise SystemExit("error: --module needs a module name, e.g. --module=ppi")
    return (names if given else None), rest


def select_modules(names: list[str] | None, known: list[str]) -> list[str]:
    """The known modules ``names`` pick (``ppi`` or ``ppi.py``), in :data:`MODULES` order; all when ``None``.

    An unknown name stops the run rather than mutating nothing (or everything) and reporting success.
    """
    if names is None:
        return list(known)
    wanted = {name if name.endswith(".py") else f"{name}.py" for name in names}
    unknown = sorted(name for name in names if (name if name.endswith(".py") else f"{name}.py") not in known)
    if unknown:
        listed = ", ".join(name.removesuffix(".py") for name in known)
        raise SystemExit(f"error: unknown decision module {', '.join(map(repr, unknown))}; the modules are: {listed}")
    return [name for name in known if name in wanted]


def test_files(modules: list[str]) -> list[str]:
    names = dict.fromkeys(name for module in modules for name in MODULES[module])
    names.update(dict.fromkeys(COMMON_TESTS))
    return [f"tests/engine/{name}" for name in names if (ROOT / "tests/engine" / name).is_file()]


def configure(modules: list[str]) -> None:
    """Give mutmut its configuration (read once, before its command line module is imported)."""
    from mutmut import configuration

    base = configuration._load_config()  # the static part: [tool.mutmut] in pyproject.toml
    configuration._config = dataclasses.replace(
        base,
        only_mutate=[str(ENGINE / name) for name in modules],
        pytest_add_cli_args=PYTEST_ARGS,
        pytest_add_cli_args_test_selection=test_files(modules),
    )


def results(modules: list[str]) -> dict[str, list[tuple[str, str, str]]]:
    """``{module: [(mutant name, status, diff), ...]}`` read from ``mutants/``."""
    from mutmut.mutation.data import SourceFileMutationData
    from mutmut.mutation.diff_apply import get_diff_for_mutant
    from mutmut.stats import status_by_exit_code

    found: dict[str, list[tuple[str, str, str]]] = {}
    for module in modules:
        data = SourceFileMutationData(path=ENGINE / module)
        data.load()
        rows = []
        for name, code in sorted(data.exit_code_by_key.items()):
            status = status_by_exit_code[code]
            tell = status not in ("killed", "timeout", "not checked")
            diff = get_diff_for_mutant(name, path=ENGINE / module) if tell else ""
            rows.append((name, status, diff))
        found[module] = rows
    return found


def changed_lines(diff: str) -> tuple[str, str]:
    """The removed and added lines of a mutant's diff, stripped (how :mod:`mutation.equivalent` names it)."""
    lines = diff.splitlines()
    removed = " ".join(line[1:].strip() for line in lines if line.startswith("-") and not line.startswith("---"))
    added = " ".join(line[1:].strip() for line in lines if line.startswith("+") and not line.startswith("+++"))
    return removed, added


def function_of(mutant: str) -> str:
    """``evalcore.engine.m.x_holm__mutmut_3`` -> ``holm``; methods (``xǁClassǁname``) -> ``Class.name``."""
    tail = mutant.rsplit(".", 1)[-1].rsplit("__mutmut_", 1)[0]
    if tail.startswith("xǁ"):
        return ".".join(tail[2:].split("ǁ"))
    return tail[2:] if tail.startswith("x_") else tail


def main(argv: list[str]) -> int:
    os.chdir(ROOT)
    keep = "--keep" in argv or "--report" in argv
    names, argv = module_option(argv)
    passed = [arg for arg in argv if arg not in ("--keep", "--report")]
    modules = select_modules(names, present_modules())
    limit = max_survival()
    if "--report" in argv:  # the last run's results again (after editing mutation/equivalent.py)
        if not Path("mutants").is_dir():
            raise SystemExit("error: no mutants/ to report on: run ./dev mutate --keep first")
        configure(modules)
        return report(modules, limit=limit, elapsed=None, keep=True)
    if not keep and Path("mutants").exists():
        shutil.rmtree("mutants")
    print(f"Mutating {', '.join(modules)}; their mutants run {', '.join(test_files(modules))}", flush=True)
    configure(modules)
    import mutmut.__main__ as mutmut_main
    from mutmut.__main__ import cli

    from .runner import get_mutant_runner

    mutmut_main.get_mutant_runner = get_mutant_runner  # one pytest session for every mutant (mutation/runner.py)

    children = os.environ.get("LSL_MUTATE_PROCESSES", str(os.cpu_count() or 1))
    started = time.monotonic()
    try:
        cli(["run", "--max-children", children, *passed], standalone_mode=False)
    except SystemExit as stop:
        if stop.code not in (0, None):
            print(f"error: mutmut stopped with {stop.code}", file=sys.stderr)
            return 1
    elapsed = time.monotonic() - started
    return report(modules, limit=limit, elapsed=elapsed, keep=keep)


def report(modules: list[str], *, limit: float, elapsed: float | None, keep: bool) -> int:
    """Print the mutants per module and the survivors; 1 if more than ``limit`` percent survive."""
    from .equivalent import EQUIVALENT

    print()
    found = results(modules)
    totals: Counter[str] = Counter()
    survivors: list[tuple[str, str]] = []
    used: set[tuple[str, str, str, str]] = set()
    print(f"{'module':<24}{'mutants':>8}{'killed':>8}{'survived':>9}{'equivalent':>11}{'other':>7}")
    for module, rows in found.items():
        counts: Counter[str] = Counter()
        for name, status, diff in rows:
            key = (module, function_of(name), *changed_lines(diff))
            if status == "survived" and key in EQUIVALENT:
                counts["equivalent"] += 1
                used.add(key)
            elif status in ("killed", "timeout"):  # a mutant that makes a test hang is caught too
                counts["killed"] += 1
            elif status == "survived":
                counts["survived"] += 1
                survivors.append((name, diff))
            else:  # no tests, suspicious, segfault...: not a kill either, listed with the survivors
                counts["other"] += 1
                survivors.append((f"{name} ({status})", diff))
        totals.update(counts)
        totals["mutants"] += len(rows)
        print(
            f"{module:<24}{len(rows):>8}{counts['killed']:>8}{counts['survived']:>9}"
            f"{counts['equivalent']:>11}{counts['other']:>7}"
        )
    counted = totals["mutants"] - totals["equivalent"]
    alive = totals["survived"] + totals["other"]
    rate = 100.0 * alive / counted if counted else 0.0
    print(
        f"{'all':<24}{totals['mutants']:>8}{totals['killed']:>8}{totals['survived']:>9}"
        f"{totals['equivalent']:>11}{totals['other']:>7}"
    )
    for name, diff in survivors:
        print(f"\nsurvived: {name}\n{diff}")
    stale = sorted(set(EQUIVALENT) - used)
    for module, function, removed, added in stale:
        if module in modules:
            print(
                f"note: an equivalent mutant no longer arises (or is now killed): {module} {function}: {removed!r} -> {added!r}"
            )
    print(
        f"\n{alive} of {counted} mutants survive ({rate:.1f} %; at most {limit:g} % allowed), "
        f"{totals['equivalent']} equivalent ones not counted" + ("" if elapsed is None else f"; {elapsed / 60:.1f} min")
    )
    if not keep:
        shutil.rmtree("mutants", ignore_errors=True)
    if rate > limit:
        print(
            f"error: {rate:.1f} % of the mutants survive, more than {limit:g} %: add tests that kill them "
            "(or, reviewed, list an equivalent one in mutation/equivalent.py)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""``./dev mutate --module=NAME``: which decision modules a run mutates, and the refusal of an unknown one."""

from __future__ import annotations

import pytest

from mutation import __main__ as runner
from mutation.__main__ import MODULES, module_option, present_modules, select_modules

KNOWN = ["release_gate.py", "paired_tests.py", "ppi.py", "_ppi.py"]


def test_no_module_option_mutates_every_present_module():
    names, rest = module_option(["--keep", "evalcore.engine.ppi.x_foo__mutmut_1"])
    assert names is None and rest == ["--keep", "evalcore.engine.ppi.x_foo__mutmut_1"]
    assert select_modules(None, KNOWN) == KNOWN


def test_module_options_repeat_take_comma_lists_and_keep_the_other_arguments_in_order():
    names, rest = module_option(["--module=_ppi", "--keep", "--module", "ppi.py,release_gate", "--report"])
    assert names == ["_ppi", "ppi.py", "release_gate"]
    assert rest == ["--keep", "--report"]
    assert select_modules(names, KNOWN) == ["release_gate.py", "ppi.py", "_ppi.py"]  # in the table's order


def test_an_unknown_module_is_refused_with_the_known_ones_listed():
    with pytest.raises(SystemExit) as stop:
        select_modules(["ppi", "tango"], KNOWN)
    assert str(stop.value) == (
        "error: unknown decision module 'tango'; the modules are: release_gate, paired_tests, ppi, _ppi"
    )


@pytest.mark.parametrize("argv", [["--module="], ["--module=,"], ["--module"], ["--module", "--keep"]])
def test_a_module_option_without_a_name_is_refused(argv):
    with pytest.raises(SystemExit, match="--module needs a module name, e.g. --module=ppi"):
        module_option(argv)


def test_a_restricted_run_tests_only_its_modules_tests():
    assert "_ppi.py" in present_modules() and set(present_modules()) <= set(MODULES)
    files = runner.test_files(["_ppi.py"])
    assert files == [f"tests/engine/{name}" for name in MODULES["_ppi.py"]] + ["tests/engine/test_validation.py"]
    assert "tests/engine/test_gate.py" not in files

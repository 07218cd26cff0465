"""The app's modules import one way only: no cycle, no import hidden inside a function, any import order.

The graph is read from the source (:mod:`tests.structure.import_graph`); the import-order test imports
every module for real, in shuffled orders, each in a fresh interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.structure import import_graph
from tests.structure.import_graph import Import, cycles, function_cycles, imports, module_files, module_graph


def test_the_apps_modules_import_one_another_without_a_cycle():
    found = cycles(module_graph(imports()))
    assert found == [], f"import cycles among the app's modules (module-level imports): {found}"


def test_no_function_imports_one_of_the_apps_modules_except_an_apps_ready():
    """An import inside a function hides a cycle (or would, the day someone adds the other half); only an
    AppConfig's ready(), which Django calls once the models are loaded, may import the app's modules late."""
    late = [
        f"{edge.source}:{edge.line} ({edge.function}) imports {edge.target}"
        for edge in imports()
        if edge.function is not None and not (edge.source.endswith(".apps") and edge.function == "ready")
    ]
    assert late == []


def test_no_late_import_closes_a_cycle_even_with_every_function_imports_counted():
    assert function_cycles(imports()) == []


def test_the_walker_sees_module_level_late_and_type_checking_imports_apart(tmp_path, monkeypatch):
    """The checks above can fail: on a small package with a cycle, one held by a late import, and an
    import only type checkers read, each is told apart."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("from .c import thing\n")
    (package / "a.py").write_text("from . import b\n")
    (package / "b.py").write_text("from pkg.a import x\n")
    (package / "sub" / "c.py").write_text(
        textwrap.dedent(
            """
            from typing import TYPE_CHECKING
            if TYPE_CHECKING:
                from ..a import x
            else:
                import pkg.d
            def late():
                from .. import e
            """
        )
    )
    (package / "d.py").write_text("")
    (package / "e.py").write_text("from pkg.sub.c import late\n")
    monkeypatch.setattr(import_graph, "ROOT", tmp_path)
    monkeypatch.setattr(import_graph, "PACKAGES", ("pkg",))
    assert set(module_files()) == {"pkg", "pkg.sub", "pkg.a", "pkg.b", "pkg.sub.c", "pkg.d", "pkg.e"}
    found = imports()
    assert Import("pkg.sub.c", "pkg.e", 8, "late") in found
    assert not any(edge.source == "pkg.sub.c" and edge.target == "pkg.a" for edge in found)
    graph = module_graph(found)
    assert graph["pkg.sub.c"] == {"pkg.d"}
    assert graph["pkg.e"] == {"pkg.sub.c", "pkg.sub"}  # importing pkg.sub.c runs pkg/sub/__init__.py first
    assert cycles(graph) == [["pkg.a", "pkg.b"]]
    assert function_cycles(found) == [Import("pkg.sub.c", "pkg.e", 8, "late")]


IMPORT_ALL = """
import importlib, json, os, random, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labelstudio_lite.settings")
import django
django.setup()
names = json.loads(sys.argv[1])
random.Random(int(sys.argv[2])).shuffle(names)
for name in names:
    importlib.import_module(name)
print(len(names))
"""


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_module_imports_in_a_shuffled_order_in_a_fresh_interpreter(seed):
    names = sorted(module_files())
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_ALL, json.dumps(names), str(seed)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=import_graph.ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == [str(len(names))]


IMPORT_EACH_FIRST = """
import importlib, json, os, sys, traceback
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labelstudio_lite.settings")
import django
django.setup()
for library in json.loads(sys.argv[2]):
    importlib.import_module(library)
failed = {}
for name in json.loads(sys.argv[1]):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            importlib.import_module(name)
        except BaseException:
            os.write(write, traceback.format_exc().strip().splitlines()[-1].encode())
            os._exit(1)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        told = pipe.read().decode()
    _, status = os.waitpid(pid, 0)
    if status:
        failed[name] = told or f"exit status {status}"
print(json.dumps(failed))
"""
#: Libraries the app's modules import, loaded once before the forks: each child then pays only for the app's
#: own modules. Loading a third-party library first cannot hide a cycle or an ordering fault among the app's
#: modules, which is what the test is about.
PRELOADED_LIBRARIES = ["numpy", "scipy.stats", "scipy.special", "pandas", "sklearn.metrics", "rest_framework"]


@pytest.mark.slow
def test_every_module_imports_first_in_its_own_fresh_interpreter():
    """Each module as the first of the app's imported after Django's set-up, each in a process of its own.

    The processes are forked from one that has just run ``django.setup()`` (and loaded the big third-party
    libraries): the same state a fresh interpreter reaches, without paying Django's set-up 257 times (one
    interpreter per module cost CI 13 minutes of one core)."""
    names = sorted(module_files())
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_EACH_FIRST, json.dumps(names), json.dumps(PRELOADED_LIBRARIES)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=import_graph.ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {}


def test_the_each_first_import_check_names_a_module_that_fails_to_import(tmp_path):
    """The forked check can fail: a module that raises on import is named with its error, the others pass."""
    (tmp_path / "broken_module_for_the_check.py").write_text("raise RuntimeError('deliberately broken')\n")
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_EACH_FIRST, json.dumps(["json", "broken_module_for_the_check"]), "[]"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=import_graph.ROOT,
        env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{import_graph.ROOT}"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "broken_module_for_the_check": "RuntimeError: deliberately broken"
    }

"""Every public function and class of the engine has a numpydoc docstring with an example.

Public: everything in ``evalcore.engine.__all__``, and the public functions and classes of the
modules not re-exported there (``judge``, ``reliability``, ``sampling``, ``spans``). The examples
themselves run as doctests (``--doctest-modules`` on ``evalcore/engine``).
"""

from __future__ import annotations

import inspect

import pytest

from evalcore import engine
from evalcore.engine import judge, reliability, sampling, spans


def _public():
    found = {}
    for name in engine.__all__:
        found.setdefault(id(getattr(engine, name)), (name, getattr(engine, name)))
    for module in (judge, reliability, sampling, spans):
        for name, obj in vars(module).items():
            if not name.startswith("_") and getattr(obj, "__module__", None) == module.__name__:
                found.setdefault(id(obj), (f"{module.__name__.rsplit('.', 1)[1]}.{name}", obj))
    return sorted((name, obj) for name, obj in found.values() if inspect.isfunction(obj) or inspect.isclass(obj))


PUBLIC = _public()


def _section(doc: str, title: str) -> str | None:
    marker = f"{title}\n{'-' * len(title)}\n"
    if marker not in doc:
        return None
    return doc.split(marker, 1)[1]


@pytest.mark.parametrize(("name", "obj"), PUBLIC, ids=[name for name, _ in PUBLIC])
def test_numpydoc_sections(name, obj):
    doc = inspect.getdoc(obj) or ""
    assert doc and doc.splitlines()[0].endswith("."), f"{name}: a one-line summary first"
    assert _section(doc, "Examples") is not None, f"{name}: no Examples section"
    if inspect.isclass(obj) and issubclass(obj, Warning):
        return
    params = [p for p in inspect.signature(obj).parameters if p not in ("self", "cls")]
    if params:
        section = _section(doc, "Parameters")
        assert section is not None, f"{name}: no Parameters section"
        assert not [p for p in params if p not in section], f"{name}: parameters missing from the docstring"
    if inspect.isfunction(obj):
        assert _section(doc, "Returns") is not None, f"{name}: no Returns section"


@pytest.mark.parametrize(
    ("name", "obj"), [(n, o) for n, o in PUBLIC if inspect.isclass(o)], ids=lambda x: getattr(x, "__name__", x)
)
def test_public_methods_and_properties_have_docstrings(name, obj):
    for attr, value in vars(obj).items():
        if attr.startswith("_"):
            continue
        function = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
        if inspect.isfunction(function):
            assert inspect.getdoc(function), f"{name}.{attr} has no docstring"


def test_the_list_of_public_objects_is_not_empty_and_holds_the_spec_functions():
    names = {name for name, _ in PUBLIC}
    assert {"recall_at_k", "precision_at_k", "reciprocal_rank", "ndcg_at_k", "cohen_kappa", "paired_bootstrap"} <= names
    assert {"judge.kappa_bootstrap", "reliability.krippendorff_alpha", "sampling.stratified_allocation"} <= names

"""The import graph of the app's own modules (evalcore/ and labelstudio_lite/), read from the source with ``ast``.

A module-level import is an edge that runs when the module is first imported; imports inside ``if
TYPE_CHECKING:`` never run, and imports inside functions run when called (kept apart, see
:func:`function_imports`). ``from package import name`` is an edge to ``package.name`` when that is a
module, else to the package (its ``__init__``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("evalcore", "labelstudio_lite")


def module_files() -> dict[str, Path]:
    """Every module of the app, by dotted name (a package by its ``__init__``)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the module imported
    line: int
    function: str | None  # the function it sits in; None at module level


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom, known: set[str]) -> Iterator[str]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            name = alias.name
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name:
                yield name
        return
    base = _resolve(module, is_package, node)
    for alias in node.names:
        if f"{base}.{alias.name}" in known:
            yield f"{base}.{alias.name}"
        elif base in known:
            yield base


def _walk(
    module: str, is_package: bool, nodes: list[ast.stmt], function: str | None, known: set[str]
) -> Iterator[Import]:
    for node in nodes:
        if isinstance(node, ast.Import | ast.ImportFrom):
            for target in _targets(module, is_package, node, known):
                if target != module:
                    yield Import(module, target, node.lineno, function)
        elif isinstance(node, ast.If) and _is_type_checking(node):
            yield from _walk(module, is_package, node.orelse, function, known)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield from _walk(module, is_package, node.body, node.name, known)
        elif isinstance(node, ast.ClassDef):
            yield from _walk(module, is_package, node.body, function, known)
        else:
            for field in ("body", "orelse", "handlers", "finalbody"):
                children = getattr(node, field, None)
                if isinstance(children, list):
                    inner = [c.body if isinstance(c, ast.ExceptHandler) else [c] for c in children]
                    yield from _walk(module, is_package, [s for group in inner for s in group], function, known)


def imports() -> list[Import]:
    """Every import of one of the app's modules by another, module-level and inside functions."""
    files = module_files()
    known = set(files)
    found = []
    for module, path in files.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        found.extend(_walk(module, path.name == "__init__.py", tree.body, None, known))
    return found


def with_packages(source: str, target: str, known: set[str]) -> set[str]:
    """``target`` and the packages Python runs first to import it (``a`` and ``a.b`` for ``a.b.c``), but not the
    packages ``source`` sits in: those are always initialised before ``source`` runs."""
    parts = target.split(".")
    ancestors = {".".join(parts[:i]) for i in range(1, len(parts))}
    own = {".".join(source.split(".")[:i]) for i in range(1, source.count(".") + 1)}
    return {target} | {p for p in ancestors - own if p in known}


def module_graph(found: list[Import]) -> dict[str, set[str]]:
    """Module-level edges: what importing each module imports at once."""
    known = set(module_files())
    graph: dict[str, set[str]] = {module: set() for module in known}
    for edge in found:
        if edge.function is None:
            graph[edge.source] |= with_packages(edge.source, edge.target, known) - {edge.source}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    """Whether importing ``start`` imports ``goal`` (through module-level imports)."""
    seen, todo = set(), [start]
    while todo:
        node = todo.pop()
        if node == goal:
            return True
        if node not in seen:
            seen.add(node)
            todo.extend(graph.get(node, ()))
    return False


def function_cycles(found: list[Import]) -> list[Import]:
    """The imports inside functions that close a cycle once every import, late ones too, is counted."""
    known = set(module_files())
    graph = module_graph(found)
    for edge in found:
        if edge.function is not None:
            graph[edge.source] |= with_packages(edge.source, edge.target, known) - {edge.source}
    return [edge for edge in found if edge.function is not None and reaches(graph, edge.target, edge.source)]

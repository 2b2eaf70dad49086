"""The package's floors (docs/design.md §1): no module imports from a floor above its own,
and no modules import each other in a circle."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "keras_attention"

FLOORS = {
    "_validation": 0,
    "_deprecation": 0,
    "functional": 0,
    "metrics": 0,
    "layers": 1,
    "cells": 2,
    "decoding": 3,
    "text": 4,
    "models": 4,
    "export": 5,
    "tuning": 5,
    "plot": 5,
    "migrate": 5,
    "training": 1,
    "pairs": 6,
    "cli": 7,
    "__main__": 7,
}


def _part(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "keras_attention" or len(parts) == 1:
        return None
    return parts[1]


def _imports(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, node.lineno
            for alias in node.names:  # `from keras_attention import models`
                if node.module == "keras_attention":
                    yield f"keras_attention.{alias.name}", node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p.parent != PACKAGE or p.stem != "__init__")


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_import_runs_upwards(path):
    relative = path.relative_to(PACKAGE)
    own = relative.parts[0] if len(relative.parts) > 1 else relative.stem
    assert own in FLOORS, f"{relative} belongs to no floor of docs/design.md §1"
    for module, line in _imports(path):
        target = _part(module)
        if target is None or target not in FLOORS:
            continue
        assert FLOORS[target] <= FLOORS[own], (
            f"{relative}:{line} imports {module} (floor {FLOORS[target]}) from floor "
            f"{FLOORS[own]} ({own})"
        )


def test_every_subpackage_has_a_floor():
    names = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    names |= {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    assert names <= set(FLOORS), sorted(names - set(FLOORS))


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict:
    """Module → the package modules it imports, anywhere in the file (a function-level lazy
    import is an edge too: it only postpones the cycle)."""
    paths = sorted(PACKAGE.rglob("*.py"))
    known = {_module_name(p) for p in paths}
    graph = {}
    for path in paths:
        edges = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:  # `from keras_attention.models import seq2seq`
                    name = f"{node.module}.{alias.name}"
                    edges.add(name if name in known else node.module)
            elif isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names)
        graph[_module_name(path)] = {m for m in edges if m in known} - {_module_name(path)}
    return graph


def _cycles(graph: dict) -> list:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_between_modules():
    # Within a floor the floors test allows any import; this one forbids circles (e.g. models/
    # seq2seq.py and models/translator.py importing each other, even lazily in a function, or
    # a module importing its own package's __init__, which imports it back).
    assert _cycles(_import_graph()) == []


def test_the_cycle_test_sees_lazy_imports():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []

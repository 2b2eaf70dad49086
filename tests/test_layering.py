"""The package's floors (docs/design.md §1): no module imports from a floor above its own,
no modules import each other in a circle, and no subpackage reaches into another's private
modules or names."""

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


def _private_owner(dotted: str) -> str | None:
    """The package a private part of `dotted` (a module, or a module and a name) belongs to:
    the subpackage (`keras_attention.functional` for `keras_attention.functional._dropout` or
    `keras_attention.functional.softmax._mask_value`), or `keras_attention` itself for its own
    top-level private modules (`keras_attention._validation`, shared by every floor); `None`
    when no part after `keras_attention` starts with `_`."""
    parts = dotted.split(".")
    if parts[0] != "keras_attention":
        return None
    for index, part in enumerate(parts[1:], start=1):
        if part.startswith("_") and not (part.startswith("__") and part.endswith("__")):
            return ".".join(parts[: min(index, 2)])
    return None


def _private_reach_ins(module: str, source: str) -> list[tuple[int, str]]:
    """(line, dotted name) of each private module or name `module` (dotted, e.g.
    `keras_attention.models._dropout`) imports from outside its own subpackage, anywhere in
    `source` (a function-level import too). Relative imports are resolved first."""
    own = ".".join(module.split(".")[:2])
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # `from .x import y` inside keras_attention.a.b: keras_attention.a.x
                package = module.split(".")[: -node.level]
                base = ".".join(package + ([base] if base else []))
            names = [f"{base}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            owner = _private_owner(name)
            if owner is not None and own != owner and not own.startswith(owner + "."):
                found.append((node.lineno, name))
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_reach_into_another_subpackages_private_parts(path):
    # A subpackage's `_modules` and `_names` are its own: another subpackage imports what it
    # shares through public names (docs/design.md §1). Within a subpackage anything goes, and
    # the package's own top-level private modules (`_validation`, `_deprecation`) serve all.
    module = _module_name(path)
    if path.name == "__init__.py":
        module += ".__init__"  # its package's relative imports resolve from the package
    found = _private_reach_ins(module, path.read_text(encoding="utf-8"))
    assert found == [], "\n".join(
        f"{path.relative_to(PACKAGE)}:{line} imports the private {name} of another "
        "subpackage; import a public name instead"
        for line, name in found
    )


@pytest.mark.parametrize(
    "module, source, refused",
    [
        (
            "keras_attention.models._dropout",
            "from keras_attention.functional._dropout import f",
            ["keras_attention.functional._dropout.f"],
        ),
        (
            "keras_attention.cells.x",
            "from keras_attention.functional.softmax import _mask",
            ["keras_attention.functional.softmax._mask"],
        ),
        (
            "keras_attention.models.x",
            "from keras_attention.functional import _dropout",
            ["keras_attention.functional._dropout"],
        ),
        (
            "keras_attention.models.x",
            "def f():\n    import keras_attention.layers._scores",
            ["keras_attention.layers._scores"],
        ),
        (
            "keras_attention.models.x",
            "from ..functional._dropout import f",
            ["keras_attention.functional._dropout.f"],
        ),
        (
            "keras_attention.plot",
            "from keras_attention.text._inputs import check",
            ["keras_attention.text._inputs.check"],
        ),
        # allowed: within a subpackage, the package's own private modules, public names, dunders
        (
            "keras_attention.functional.dropout",
            "from keras_attention.functional.sampling.rng import _mix",
            [],
        ),
        ("keras_attention.models.seq2seq", "from keras_attention.models._dropout import D", []),
        ("keras_attention.models.seq2seq", "from keras_attention._validation import check_int", []),
        ("keras_attention.models.seq2seq", "from keras_attention import _deprecation", []),
        ("keras_attention.models.seq2seq", "from keras_attention.functional import matmul", []),
        ("keras_attention.models.seq2seq", "from keras_attention import __version__", []),
        ("keras_attention.models.seq2seq", "from keras._tf_keras import x", []),
    ],
)
def test_the_private_import_test_sees_reach_ins(module, source, refused):
    assert [name for _, name in _private_reach_ins(module, source)] == refused

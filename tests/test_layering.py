"""The package's floors (docs/design.md §1): no module imports from a floor above its own."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "keras_attention"

FLOORS = {
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

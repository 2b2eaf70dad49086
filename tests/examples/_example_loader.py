"""Load an example script as a module (`examples/` is not a package, and a plain import of
`tests/examples/<name>` would shadow it)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load_example(name: str) -> ModuleType:
    """`examples/<name>.py`, executed once per call under the module name `_<name>_example`."""
    spec = importlib.util.spec_from_file_location(f"_{name}_example", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

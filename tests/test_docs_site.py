"""The API reference site (`make docs`) has a page for every public name.

`docsite/public_api.py` finds the public names statically (the site builds without the
backends); these tests compare what it found with the imported package: every name in the
`__all__` of `keras_attention` and of each public module under it gets a reference page that
renders that very object; the names of the implementation modules inside the subpackages that
their package does not re-export get pages of their own. The build itself, strict,
with the check that every page holds its rendered object and examples, is `make docs` (CI).
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

import pytest

import keras_attention

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docsite"))
import public_api  # noqa: E402

pytestmark = pytest.mark.tensorflow_only  # imports keras_attention.text / .export


def _runtime_public_modules() -> dict[str, list[str]]:
    """Every importable module of the package with no `_` part in its name, and its `__all__`."""
    found = {"keras_attention": list(keras_attention.__all__)}
    for info in pkgutil.walk_packages(keras_attention.__path__, "keras_attention."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        module = importlib.import_module(info.name)
        if hasattr(module, "__all__"):
            found[info.name] = list(module.__all__)
    return found


RUNTIME = _runtime_public_modules()
PAGES = public_api.pages()
FILES = public_api.generated_files()


def _resolve(identifier: str):
    """`a.b.c` as `getattr(import_module("a.b"), "c")` (a package attribute, not a submodule)."""
    module, name = identifier.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


def _names_with_a_page() -> list[tuple[str, str]]:
    """Every (module, name) of the runtime's public modules; an implementation module's names
    that its package re-exports are documented at the package."""
    cases = []
    for module, names in RUNTIME.items():
        parent = module.rsplit(".", 1)[0]
        for name in names:
            if module.count(".") > 1 and name in RUNTIME.get(parent, []):
                continue
            cases.append((module, name))
    return cases


def test_the_site_finds_the_same_public_modules():
    assert set(public_api.public_modules()) == {m for m, _ in _names_with_a_page()}
    assert {"keras_attention.layers", "keras_attention.functional.sampling"} <= set(
        public_api.public_modules()
    )


@pytest.mark.parametrize(("module", "name"), _names_with_a_page())
def test_every_public_name_has_a_page_rendering_it(module, name):
    page = PAGES[(module, name)]
    assert page.path in FILES
    markdown = FILES[page.path]
    assert f"::: {page.identifier}\n" in markdown
    if name.startswith("__"):
        assert f"`{module}.{name}`" in markdown
        return
    assert _resolve(page.identifier) is getattr(importlib.import_module(module), name)


def test_a_function_named_like_its_module_gets_the_function():
    """`keras_attention.decoding.beam_search` is the function (the package re-exports it over
    the submodule of the same name)."""
    page = PAGES[("keras_attention.decoding", "beam_search")]
    assert page.identifier == "keras_attention.decoding.beam_search.beam_search"
    assert _resolve(page.identifier) is keras_attention.decoding.beam_search


def test_module_pages_link_every_name():
    for module, names in public_api.public_modules().items():
        markdown = FILES[public_api.module_page(module)]
        for name in names:
            assert f"`{name}`" in markdown, (module, name)

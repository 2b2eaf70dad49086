"""The README's Python snippets run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
SNIPPETS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


# Snippets that use a TensorFlow-only module run on the TensorFlow backend only.
TENSORFLOW_ONLY = ("keras_attention.text", "keras_attention.export", "Translator", "tensorflow")


def _snippet_params():
    for index, snippet in enumerate(SNIPPETS):
        tf_only = any(name in snippet for name in TENSORFLOW_ONLY)
        yield pytest.param(index, marks=[pytest.mark.tensorflow_only] if tf_only else [])


def test_readme_has_snippets():
    assert len(SNIPPETS) >= 3


@pytest.mark.parametrize("index", list(_snippet_params()))
def test_readme_snippet_runs(index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # snippets may write files
    exec(compile(SNIPPETS[index], f"README.md snippet {index}", "exec"), {})


WALKTHROUGH = README.parent / "docs" / "walkthrough.md"


def test_walkthrough_doctests():
    """Every number in docs/walkthrough.md is printed by code that runs (on every backend)."""
    import doctest

    pytest.importorskip("matplotlib")
    result = doctest.testfile(
        str(WALKTHROUGH),
        module_relative=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
        raise_on_error=False,
        verbose=False,
    )
    assert result.attempted > 40
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed"

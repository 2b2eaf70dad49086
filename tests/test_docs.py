"""The README and the guides of the docs site: their Python snippets run as written, and the
README stays a page (what it is, install, one example, the two quick-start commands, the
headline figures and links)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GUIDES = sorted((ROOT / "docs").glob("*.md"))
README_MAX_LINES = 300
_PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", flags=re.S)


def _standalone(page: str, snippet: str) -> bool:
    """Whether a Python block is a program of its own. The walkthrough's blocks are one doctest
    session (`test_walkthrough_doctests`); the tfa guide's worked example needs TensorFlow Addons
    or the checkpoint it wrote and goes on from block to block
    (tests/compat/tfa/test_tfa_checkpoints.py runs it), its cell-options example stands alone."""
    if snippet.lstrip().startswith(">>>"):
        return False
    if page == "docs/migrating-from-tfa.md":
        return "# tfa: AttentionWrapper(" in snippet
    return True


SNIPPETS = [
    (path.relative_to(ROOT).as_posix(), index, snippet)
    for path in [README, *GUIDES]
    for index, snippet in enumerate(_PYTHON_BLOCK.findall(path.read_text(encoding="utf-8")))
    if _standalone(path.relative_to(ROOT).as_posix(), snippet)
]

# Snippets that use a TensorFlow-only module run on the TensorFlow backend only.
TENSORFLOW_ONLY = ("keras_attention.text", "keras_attention.export", "Translator", "tensorflow")


def _snippet_params():
    for page, index, snippet in SNIPPETS:
        tf_only = any(name in snippet for name in TENSORFLOW_ONLY)
        yield pytest.param(
            page,
            index,
            snippet,
            id=f"{page}-{index}",
            marks=[pytest.mark.tensorflow_only] if tf_only else [],
        )


def test_snippets_are_found():
    """The README's example, and the guides' examples that were the README's until the guides
    took them over (issue 43): none may drop out of the tests unnoticed."""
    pages = {page for page, _, _ in SNIPPETS}
    assert {
        "README.md",
        "docs/attention-layers.md",
        "docs/decoders.md",
        "docs/decoding.md",
        "docs/seq2seq.md",
        "docs/pronunciation.md",
        "docs/migrating-from-tfa.md",
    } <= pages
    assert len(SNIPPETS) >= 14


@pytest.mark.parametrize(("page", "index", "snippet"), list(_snippet_params()))
def test_snippet_runs(page, index, snippet, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # snippets may write files
    exec(compile(snippet, f"{page} snippet {index}", "exec"), {})


def test_readme_fits_a_screen():
    """The README is the front page: guides and reference live on the docs site."""
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines (at most {README_MAX_LINES}): move the detail into a "
        "page of docs/ and link it"
    )


def test_readme_quick_start_is_two_make_targets():
    """The quick start is exactly `make demo` and `make test`, both targets of the Makefile."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    commands = [line.split("#", 1)[0].strip() for line in block.strip().splitlines()]
    assert commands == ["make demo", "make test"]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("demo", "test"):
        assert re.search(rf"^{target}:", makefile, flags=re.M), target


def test_readme_links_resolve():
    """Every relative link of the README names a file of the repository (on GitHub and PyPI
    the README is read without the docs site's link rewriting)."""
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^()\s]+)\)", text)
    relative = [link.split("#", 1)[0] for link in links if not re.match(r"^[a-z]+:", link)]
    assert relative
    for link in relative:
        assert (ROOT / link).is_file(), link


WALKTHROUGH = ROOT / "docs" / "walkthrough.md"


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

"""The README and the guides of the docs site: their Python snippets run as written, and the
README stays a page (what it is, install, one example, the two quick-start commands, the
headline figures and links); BENCHMARKS.md "At a glance" holds current figures, each with its
host class."""

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
TENSORFLOW_ONLY = (
    "keras_attention.text",
    "keras_attention.export",
    "keras_attention.pairs",
    "Translator",
    "tensorflow",
)


# Snippets that train with XLA, train through the command's library, or export (20-100 s
# each on 2 cores) run with the slow tests (`make test-extended`, which CI runs), keeping
# `make test` within its 15 minutes (issue 43); the others run in `make test`.
SLOW = ("export_saved_model(", "export_litert(", "keras_attention.pairs", "ScheduledSampling(")


def _snippet_params():
    for page, index, snippet in SNIPPETS:
        tf_only = any(name in snippet for name in TENSORFLOW_ONLY)
        slow = any(name in snippet for name in SLOW)
        yield pytest.param(
            page,
            index,
            snippet,
            id=f"{page}-{index}",
            marks=[pytest.mark.tensorflow_only] * tf_only + [pytest.mark.slow] * slow,
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


# ---------------------------------------------------------------- BENCHMARKS.md "At a glance"
BENCHMARKS = README.parent / "BENCHMARKS.md"
#: The hosts a figure may come from, each defined under the table ("Hosts: ..."). A row's host
#: cell is one of them, optionally followed by what the section says of that run's host
#: (", quiet", ", shared", its instruction set).
HOST_CLASSES = ("AMD, 2 cores", "Intel, 2 cores", "one H200")
#: A figure: 7, 1.00, 18,000; a number starts a word (not the 50 of "p50").
NUMBER = re.compile(r"(?<![\w.,])\d+(?:,\d{3})*(?:\.\d+)?")


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _glance_table(text: str) -> tuple[list[dict], str]:
    """The rows of the "At a glance" table as {column: cell}, and the text after the table up
    to the next heading (where the host classes are defined)."""
    glance = re.split(r"^## At a glance\n", text, flags=re.M)[1]
    glance = re.split(r"^#{1,3} ", glance, flags=re.M)[0]
    lines = glance.strip("\n").splitlines()
    table = [line for line in lines if line.startswith("|")]
    header = _cells(table[0])
    rows = [dict(zip(header, _cells(line))) for line in table[2:]]
    return rows, "\n".join(line for line in lines if not line.startswith("|"))


def _section_opening(text: str, number: str) -> str | None:
    """Section §`number`'s text before its first subsection: where it states its current
    figures (the subsections below are the experiments behind them)."""
    match = re.search(rf"^## {number}\. .*$", text, flags=re.M)
    if match is None:
        return None
    return re.split(r"^#{1,3} ", text[match.end() :], flags=re.M)[0]


def glance_problems(text: str) -> list[str]:
    """What is wrong with BENCHMARKS.md's "At a glance" table (`text`: the whole file): a row
    without a known host class; a row whose figures (every number of its `figure` and
    `against` cells) or whose commit its section's opening does not state, e.g. a figure the
    section has since replaced and left to the history."""
    rows, notes = _glance_table(text)
    problems = [f"host class {c!r} is not defined under the table" for c in HOST_CLASSES]
    problems = [p for c, p in zip(HOST_CLASSES, problems) if f'"{c}"' not in notes]
    for row in rows:
        name = f"row {row['area']!r} / {row['what']!r}"
        host = row.get("host", "")
        if not any(host == c or host.startswith(c + ", ") for c in HOST_CLASSES):
            problems.append(f"{name}: host {host!r} names none of {HOST_CLASSES}")
        section = re.match(r"§(\d+)\b", row["area"])
        opening = section and _section_opening(text, section.group(1))
        if opening is None:
            problems.append(f"{name}: cites no section of BENCHMARKS.md")
            continue
        stated = set(NUMBER.findall(opening))
        missing = [
            n for n in NUMBER.findall(f"{row['figure']} {row['against']}") if n not in stated
        ]
        if missing:
            problems.append(f"{name}: {missing} not among §{section.group(1)}'s current figures")
        if not row["commit"] or row["commit"] not in opening:
            problems.append(f"{name}: commit {row['commit']!r} not in §{section.group(1)}")
    return problems


def test_benchmarks_at_a_glance_holds_current_figures_with_their_hosts():
    assert glance_problems(BENCHMARKS.read_text(encoding="utf-8")) == []


_GLANCE = """\
## At a glance

| area | what | figure | against | command | commit | host |
|---|---|---:|---|---|---|---|
ROW

Hosts: "AMD, 2 cores" is one; "Intel, 2 cores" another; "one H200" a GPU.

## 7. G2P

The default run (commit 751fd69): WER 23.50%, PER 5.55% (goal 24.5 / 5.9), Phonetisaurus
26.06% / 6.25%.

### Session 1, 2026-12-01

The first default run, commit a202cb0: WER 28.44%, PER 6.84% (goal WER 30%, PER 8%).
"""
_CURRENT = "| §7 G2P | default | **WER 23.50%, PER 5.55%** (goal 24.5 / 5.9) | Phonetisaurus: 26.06% / 6.25% | `pronounce.py` | 751fd69 | HOST |"  # noqa: E501


@pytest.mark.parametrize(
    "row, problem",
    [
        (_CURRENT.replace("HOST", "Intel, 2 cores"), None),
        (_CURRENT.replace("HOST", "Intel, 2 cores, quiet, AVX-512 + AMX"), None),
        (_CURRENT.replace("HOST", ""), "host '' names none"),
        (_CURRENT.replace("HOST", "a laptop"), "host 'a laptop' names none"),
        (_CURRENT.replace("HOST", "Intel, 2 coresXL"), "names none"),
        (  # superseded: only the history behind the section's figures has it
            "| §7 G2P | old | **WER 28.44%, PER 6.84%** | goal WER ≤ 30%, PER ≤ 8% | "
            "`pronounce.py` | a202cb0 | AMD, 2 cores |",
            r"\['28.44', '6.84', '30', '8'\] not among §7's current figures",
        ),
        (_CURRENT.replace("23.50", "23.51").replace("HOST", "AMD, 2 cores"), r"\['23.51'\]"),
        (_CURRENT.replace("751fd69", "a202cb0").replace("HOST", "AMD, 2 cores"), "a202cb0"),
        (_CURRENT.replace("§7", "§9").replace("HOST", "AMD, 2 cores"), "cites no section"),
    ],
)
def test_the_glance_check_refuses_rows_without_host_or_with_old_figures(row, problem):
    problems = glance_problems(_GLANCE.replace("ROW", row))
    if problem is None:
        assert problems == []
    else:
        assert problems and all(re.search(problem, p) for p in problems[:1]), problems

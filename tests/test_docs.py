"""The README's Python snippets run as written; docs/walkthrough.md's doctests pass; BENCHMARKS.md
"At a glance" holds current figures, each with its host class."""

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

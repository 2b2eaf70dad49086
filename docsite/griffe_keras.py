"""A griffe extension for the Keras docstring style of keras_attention (mkdocs.yml loads it).

Griffe's Google parser knows `Args:`, `Returns:`, `Raises:`, `Attributes:` and an indented
`Examples:` section. Keras docstrings also have

- `Call arguments:` (the arguments of `call`, in a layer's class docstring): rendered here as a
  second parameter table titled "Call arguments" instead of an admonition of raw text;
- one line documenting several arguments (`temperature, top_k: As in ...`): one per argument;
- `Example:` followed by a blank line and doctest lines at the docstring's own indentation
  (Keras' layout, which griffe reads as an empty section followed by text, and Markdown as
  nested block quotes): indented into an `Examples:` section, so that each `>>>` block renders
  as a Python console code block.
"""

from __future__ import annotations

import re

import griffe

_SECTION = re.compile(r"^([A-Z][A-Za-z ]*):\s*$")
_SHARED = re.compile(r"^(\s+)([A-Za-z_]\w*(?:, [A-Za-z_]\w*)+): (.*)$")
_DEFAULT = re.compile(r"Defaults to `([^`]*)`")
_ARG = re.compile(r"^(\*{0,2}[A-Za-z_][A-Za-z0-9_]*)\s*(?:\(([^)]*)\))?:\s*(.*)$")


def _indent_examples(text: str) -> str:
    """`Example:` + blank line + unindented doctest → an indented `Examples:` section."""
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        if line.strip() in ("Example:", "Examples:") and not line.startswith(" "):
            out.append("Examples:")
            i += 1
            while i < len(lines) and not _SECTION.match(lines[i]):
                out.append(("    " + lines[i]) if lines[i].strip() else "")
                i += 1
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def _call_arguments(section: griffe.DocstringSectionAdmonition) -> griffe.DocstringSection:
    """The admonition griffe made of `Call arguments:` as a parameter table."""
    params: list[griffe.DocstringParameter] = []
    for line in section.value.contents.split("\n"):
        match = _ARG.match(line) if line and not line.startswith(" ") else None
        if match:
            name, annotation, description = match.groups()
            params.append(
                griffe.DocstringParameter(name, description=description, annotation=annotation)
            )
        elif params:
            params[-1].description += "\n" + line.strip()
    if not params:
        return section
    for param in params:  # the default the description states (else griffe says "required")
        default = _DEFAULT.search(param.description)
        if default:
            param.value = default.group(1)
    return griffe.DocstringSectionParameters(params, title="Call arguments:")


def _split_shared(text: str) -> str:
    """`a, b: As in f.` (one line for several arguments) → one line per argument."""
    lines = []
    for line in text.split("\n"):
        match = _SHARED.match(line)
        if match:
            indent, names, description = match.groups()
            lines += [f"{indent}{name}: {description}" for name in names.split(", ")]
        else:
            lines.append(line)
    return "\n".join(lines)


class KerasDocstrings(griffe.Extension):
    """Rewrite Keras sections before griffe parses the docstrings (see the module docstring)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring:
            obj.docstring.value = _split_shared(_indent_examples(obj.docstring.value))

    def on_object(self, *, obj: griffe.Object, **kwargs) -> None:
        docstring = obj.docstring
        if not docstring or "Call arguments:" not in docstring.value:
            return
        sections = list(docstring.parsed)
        for index, section in enumerate(sections):
            if (
                isinstance(section, griffe.DocstringSectionAdmonition)
                and (section.title or "").rstrip(":").lower() == "call arguments"
            ):
                sections[index] = _call_arguments(section)
        docstring.__dict__["parsed"] = sections  # `parsed` is a cached_property

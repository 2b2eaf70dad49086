"""A griffe extension for the Keras docstring style of keras_attention (mkdocs.yml loads it).

Griffe's Google parser knows `Args:`, `Returns:`, `Raises:`, `Attributes:` and an indented
`Examples:` section. Keras docstrings also have

- `Call arguments:` (the arguments of `call`, in a layer's class docstring): rendered here as a
  second parameter table titled "Call arguments" instead of an admonition of raw text. A layer
  whose call takes another layer's arguments writes them once: its block opens with
  ``As `OtherLayer`'s`` and lists only the arguments that differ; its table here is the other
  layer's with those replaced (and any new ones appended);
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
_DEFAULT = re.compile(r"Defaults to\s+`([^`]*)`")
_ARG = re.compile(r"^(\*{0,2}[A-Za-z_][A-Za-z0-9_]*)\s*(?:\(([^)]*)\))?:\s*(.*)$")
_REFERENCE = re.compile(r"^As `([A-Za-z_]\w*)`'s\b")


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


def _call_arguments(section: griffe.DocstringSectionAdmonition) -> tuple:
    """The admonition griffe made of `Call arguments:` as a parameter table, and the name of
    the layer whose call arguments it takes (``As `Layer`'s``), or `None`."""
    params: list[griffe.DocstringParameter] = []
    lines = section.value.contents.split("\n")
    reference = _REFERENCE.match(lines[0]) if lines else None
    if reference:
        lines = lines[1:]
    for line in lines:
        match = _ARG.match(line) if line and not line.startswith(" ") else None
        if match:
            name, annotation, description = match.groups()
            params.append(
                griffe.DocstringParameter(name, description=description, annotation=annotation)
            )
        elif params:
            params[-1].description += "\n" + line.strip()
    if not params and not reference:
        return section, None
    for param in params:  # the default the description states (else griffe says "required")
        default = _DEFAULT.search(param.description)
        if default:
            param.value = default.group(1)
    table = griffe.DocstringSectionParameters(params, title="Call arguments:")
    return table, reference.group(1) if reference else None


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


def _classes(module: griffe.Object) -> dict:
    """Every class defined in `module` and its submodules, by name."""
    found = {}
    for member in module.members.values():
        if member.is_alias:
            continue
        if member.is_class:
            found[member.name] = member
        elif member.is_module:
            found.update(_classes(member))
    return found


def _call_table(obj: griffe.Object):
    """The `Call arguments:` table of `obj`'s docstring (made from griffe's admonition the
    first time), and the layer it takes its arguments from (``As `Layer`'s``) or `None`;
    `(None, None)` for a docstring without one."""
    docstring = obj.docstring
    if not docstring or "Call arguments:" not in docstring.value:
        return None, None
    sections = list(docstring.parsed)
    for index, section in enumerate(sections):
        if isinstance(section, griffe.DocstringSectionParameters):
            if section.title == "Call arguments:":
                return section, getattr(section, "reference", None)
        elif (
            isinstance(section, griffe.DocstringSectionAdmonition)
            and (section.title or "").rstrip(":").lower() == "call arguments"
        ):
            table, reference = _call_arguments(section)
            if table is not section:
                table.reference = reference
            sections[index] = table
            docstring.__dict__["parsed"] = sections  # `parsed` is a cached_property
            return table, reference
    return None, None


class KerasDocstrings(griffe.Extension):
    """Rewrite Keras sections before griffe parses the docstrings (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self._pending: list = []  # tables that take another layer's arguments, not yet merged

    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring:
            obj.docstring.value = _split_shared(_indent_examples(obj.docstring.value))

    def on_object(self, *, obj: griffe.Object, **kwargs) -> None:
        table, reference = _call_table(obj)
        if reference:
            self._pending.append((obj, table, reference))
            self._merge(obj.package)

    def _merge(self, package: griffe.Object) -> None:
        """Fill in the tables whose layer is loaded: that layer's call arguments, those the
        table lists replacing theirs (new ones appended). Griffe runs `on_object` once the
        package is loaded, so the layer is found at once; a table left unfilled fails
        `make docs` (`docsite/hooks.py`)."""
        classes, pending = _classes(package), []
        for obj, table, reference in self._pending:
            source = classes.get(reference)
            source_table = _call_table(source)[0] if source is not None else None
            if source_table is None:
                pending.append((obj, table, reference))
                continue
            own = {param.name: param for param in table.value}
            table.value[:] = [own.pop(p.name, p) for p in source_table.value] + list(own.values())
        self._pending = pending

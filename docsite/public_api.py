"""The public names of keras_attention and the API reference pages made for them.

Read statically (the `__all__` lists of the package's modules, parsed with `ast`), so that the
site builds without TensorFlow, JAX or PyTorch and without importing the package. Used by the
MkDocs hook (`docsite/hooks.py`) to generate `reference/...` pages and by
`tests/test_docs_site.py`, which checks against the imported package that every public name has
a page.

A public module is `keras_attention` or a module or package under it whose dotted path has no
part starting with `_` and which defines `__all__`. Each name gets one page, at the shallowest
public module below `keras_attention` that exports it (`keras_attention.LuongAttention` and
`keras_attention.layers.luong_attention.LuongAttention` are documented at
`reference/layers/LuongAttention/`); a name that is itself a public module gets that module's
index page. The modules inside the subpackages (`decoding/beam_search.py`) get a page only for
the names their package does not re-export (`functional.sampling.sample_tokens`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "keras_attention"


@dataclass(frozen=True)
class Page:
    """One reference page: `path` inside the site's docs, the `identifier` it renders."""

    path: str
    identifier: str
    title: str
    kind: str  # "module" or "name"


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _all_of(path: Path) -> list[str] | None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return list(ast.literal_eval(node.value))
    return None


def public_modules(root: Path = ROOT) -> dict[str, list[str]]:
    """`{module: __all__}` for every public module of the package, sorted by module."""
    found = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        name = _module_name(path, root)
        if any(part.startswith("_") for part in name.split(".")):
            continue
        names = _all_of(path)
        if names is not None:
            found[name] = names
    for name in sorted(found, key=lambda n: -n.count(".")):  # deeper modules: their own names
        parent = name.rsplit(".", 1)[0]
        if name.count(".") > 1 and parent in found:
            own = [n for n in found[name] if n not in found[parent]]
            if own:
                found[name] = own
            else:
                del found[name]
    return dict(sorted(found.items()))


def _source_module(module: str, name: str, root: Path) -> str | None:
    """The module `name` is imported from in `module`'s file (`from M import name`)."""
    relative = Path(*module.split("."))
    path = root / relative / "__init__.py"
    if not path.is_file():
        path = (root / relative).with_suffix(".py")
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and any(a.name == name for a in node.names):
            return node.module
    return None


def _is_module_file(dotted: str, root: Path) -> bool:
    relative = Path(*dotted.split("."))
    return (root / relative / "__init__.py").is_file() or (root / relative).with_suffix(
        ".py"
    ).is_file()


def module_page(module: str) -> str:
    """`reference/index.md` for the package, `reference/layers/index.md` for a subpackage."""
    rest = module.split(".")[1:]
    return "/".join(["reference", *rest, "index.md"])


def canonical_module(module: str, name: str, modules: dict[str, list[str]]) -> str:
    """The shallowest public module below `keras_attention` exporting `name` (or `module`)."""
    candidates = [
        other
        for other, names in modules.items()
        if name in names
        and other != PACKAGE
        and (other == module or other.startswith(module + "."))
    ]
    return min(candidates, key=lambda m: (m.count("."), m)) if candidates else module


def pages(root: Path = ROOT) -> dict[tuple[str, str], Page]:
    """`{(module, name): Page}` for every public name, and `(module, "")` for each module."""
    modules = public_modules(root)
    result: dict[tuple[str, str], Page] = {}
    for module in modules:
        result[(module, "")] = Page(module_page(module), module, module, "module")
    for module, names in modules.items():
        for name in names:
            dotted = f"{module}.{name}"
            if dotted in modules:  # a public submodule: its own index page
                result[(module, name)] = result[(dotted, "")]
                continue
            if name.startswith("__"):  # __version__: documented on the module's page
                result[(module, name)] = result[(module, "")]
                continue
            home = canonical_module(module, name, modules)
            path = "/".join([*module_page(home).split("/")[:-1], f"{name}.md"])
            identifier = f"{home}.{name}"
            if _is_module_file(identifier, root):  # `decoding.beam_search`: the function, not
                source = _source_module(home, name, root)  # the module of the same name
                identifier = f"{source}.{name}"
                path = path[: -len(".md")] + "_.md"  # beside the module's own folder
            result[(module, name)] = Page(path, identifier, name, "name")
    return result


def page_markdown(
    page: Page, modules: dict[str, list[str]], all_pages: dict, summaries: dict | None = None
) -> str:
    """The Markdown of one reference page (mkdocstrings' `:::` directive and, for a module, a
    table of its public names linking to their pages, with their docstrings' summary lines
    where `summaries` (identifier -> line) has them)."""
    summaries = summaries or {}
    if page.kind == "name":
        return f"::: {page.identifier}\n    options:\n      heading_level: 1\n"
    module = page.identifier
    lines = [
        f"# `{module}`",
        "",
        f"::: {module}",
        "    options:",
        "      members: false",
        "      show_root_heading: false",
        "      show_root_toc_entry: false",
        "",
        "| Name | Summary |",
        "| --- | --- |",
    ]
    here = page.path.rsplit("/", 1)[0]
    for name in modules[module]:
        target = all_pages[(module, name)]
        if target.path == page.path:
            lines.append(f"| `{name}` | this page |")
            continue
        summary = summaries.get(target.identifier) or f"`{target.identifier}`"
        summary = summary.replace("|", "\\|")
        lines.append(f"| [`{name}`]({_relative(here, target.path)}) | {summary} |")
    if "__version__" in modules[module]:
        lines += ["", f"`{module}.__version__` is the package's version (a string)."]
    return "\n".join(lines) + "\n"


def _relative(from_dir: str, to_path: str) -> str:
    a, b = from_dir.split("/"), to_path.split("/")
    common = 0
    while common < min(len(a), len(b) - 1) and a[common] == b[common]:
        common += 1
    return "/".join([".."] * (len(a) - common) + b[common:])


def generated_files(root: Path = ROOT, summaries: dict | None = None) -> dict[str, str]:
    """`{path in the docs: Markdown}` for every reference page."""
    modules = public_modules(root)
    all_pages = pages(root)
    unique = {page.path: page for page in all_pages.values()}
    return {
        path: page_markdown(page, modules, all_pages, summaries)
        for path, page in sorted(unique.items())
    }

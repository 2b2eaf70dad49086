"""MkDocs hooks of the API reference site (`make docs`; mkdocs.yml names this file).

- The repository's root documents become pages: README.md the index, CHANGELOG.md and
  BENCHMARKS.md; docs/*.md are the guides (whatever docs/ holds, in the navigation by title,
  in the reading order of `GUIDE_ORDER`, then any other page by file name).
- Links between them are rewritten to the site's pages (`docs/design.md` from the README is
  `design.md` here); a link to a repository file that is not a page (an example script, a test)
  becomes its text, since the site has no copy of it. Links inside code blocks are left alone.
- A reference page for every public name (`docsite/public_api.py`), rendered by mkdocstrings
  from the docstrings.
- After the build, every reference page must hold its object's rendered heading, and every
  docstring example its code block: otherwise the build fails.
"""

from __future__ import annotations

import posixpath
import re
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

sys.path.insert(0, str(Path(__file__).resolve().parent))
import public_api  # noqa: E402

ROOT = public_api.ROOT
ROOT_PAGES = {
    "README.md": "index.md",
    "CHANGELOG.md": "changelog.md",
    "BENCHMARKS.md": "benchmarks.md",
}
_LINK = re.compile(r"(!?)\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^()\s]+)((?:\s+\"[^\"]*\")?)\)")
_FENCE = re.compile(r"^\s*(```|~~~)")
_GENERATED: dict[str, str] = {}
# A rendered `>>>` example: a highlighted code block starting with the prompt.
_EXAMPLE_BLOCK = re.compile(r'<code>(?:<span class="gp">)?&gt;&gt;&gt;')


def _title(markdown: str, default: str) -> str:
    for line in markdown.splitlines():
        if line.startswith("# "):
            return line[2:].replace("`", "").strip()
    return default


# The guides in reading order: learning attention, the layers, the decoders, the searches, the
# models, the examples, running at scale, then the notes. A page of docs/ not named here
# follows them, by file name.
GUIDE_ORDER = [
    "walkthrough.md",
    "cli.md",
    "attention-layers.md",
    "decoders.md",
    "monotonic-attention.md",
    "decoding.md",
    "seq2seq.md",
    "pronunciation.md",
    "examples.md",
    "backends.md",
    "scaling.md",
    "multi-worker-keras-bug.md",
    "migrating-from-tfa.md",
    "development.md",
    "design.md",
    "benchmarks-history.md",
]


def _guides() -> list[Path]:
    rank = {name: index for index, name in enumerate(GUIDE_ORDER)}
    return sorted((ROOT / "docs").glob("*.md"), key=lambda p: (rank.get(p.name, len(rank)), p.name))


_STATIC: dict = {}


def _static_object(identifier: str):
    """The object an identifier names, read statically by griffe (the package loaded once per
    build), or None."""
    import griffe

    if "package" not in _STATIC:
        _STATIC["package"] = griffe.load(public_api.PACKAGE, search_paths=[str(ROOT)])
    package = _STATIC["package"]
    try:
        obj = package[identifier.split(".", 1)[1]] if "." in identifier else package
        while obj.is_alias:
            obj = obj.final_target
    except Exception:  # noqa: BLE001 - an object griffe cannot resolve has no docstring to read
        return None
    return obj


def _summaries() -> dict[str, str]:
    """The first paragraph of every reference page's docstring, on one line."""
    found = {}
    for page in public_api.pages().values():
        obj = _static_object(page.identifier)
        if obj is not None and obj.docstring:
            first = obj.docstring.value.strip().split("\n\n")[0]
            found[page.identifier] = first.replace("\n", " ")
    return found


def on_config(config, **kwargs):
    _STATIC.clear()
    _GENERATED.clear()
    _GENERATED.update(public_api.generated_files(summaries=_summaries()))
    modules = public_api.public_modules()
    all_pages = public_api.pages()
    reference: list = [{"Overview": public_api.module_page(public_api.PACKAGE)}]
    for module in modules:
        if module == public_api.PACKAGE:
            continue
        folder = public_api.module_page(module).rsplit("/", 1)[0]
        own = sorted(
            {
                p.path: p
                for p in all_pages.values()
                if p.kind == "name" and p.path.rsplit("/", 1)[0] == folder
            }.values(),
            key=lambda p: p.title.lower(),
        )
        section = [{"Overview": public_api.module_page(module)}]
        section += [{p.title: p.path} for p in own]
        reference.append({module.split(".", 1)[1]: section})
    guides = [{_title(p.read_text(encoding="utf-8"), p.stem): p.name} for p in _guides()]
    config["nav"] = [
        {"Home": "index.md"},
        {"Guides": guides},
        {"API reference": reference},
        {"Benchmarks": "benchmarks.md"},
        {"Changelog": "changelog.md"},
    ]
    return config


def on_files(files, config, **kwargs):
    for source, target in ROOT_PAGES.items():
        files.append(
            File.generated(config, target, content=(ROOT / source).read_text(encoding="utf-8"))
        )
    for path, content in _GENERATED.items():
        files.append(File.generated(config, path, content=content))
    return files


def _repository_path(page_uri: str) -> str:
    """Where the page's Markdown lives in the repository (links in it are relative to that)."""
    for source, target in ROOT_PAGES.items():
        if page_uri == target:
            return source
    return f"docs/{page_uri}"


def _site_uri(repo_path: str) -> str | None:
    """The site page or asset for a repository path, or None when the site has no copy."""
    if repo_path in ROOT_PAGES:
        return ROOT_PAGES[repo_path]
    if repo_path.startswith("docs/") and (ROOT / repo_path).is_file():
        return repo_path[len("docs/") :]
    return None


def _rewrite(markdown: str, page_uri: str) -> str:
    source_dir = posixpath.dirname(_repository_path(page_uri))
    page_dir = posixpath.dirname(page_uri)

    def fix(match: re.Match) -> str:
        bang, text, url, title = match.groups()
        if re.match(r"^[a-z][a-z0-9+.-]*:", url) or url.startswith("#"):
            return match.group(0)
        path, _, anchor = url.partition("#")
        repo_path = posixpath.normpath(posixpath.join(source_dir, path))
        target = _site_uri(repo_path)
        if target is None:  # a repository file the site does not hold: keep the words only
            return text if not bang else f"*({text})*"
        new = posixpath.relpath(target, page_dir or ".") + (f"#{anchor}" if anchor else "")
        return f"{bang}[{text}]({new}{title})"

    out, in_code = [], False
    for line in markdown.splitlines(keepends=True):
        if _FENCE.match(line):
            in_code = not in_code
        out.append(line if in_code else _LINK.sub(fix, line))
    return "".join(out)


def on_page_markdown(markdown, page, config, files, **kwargs):
    if page.file.src_uri.startswith("reference/"):
        return markdown
    return _rewrite(markdown, page.file.src_uri)


def _has_examples(identifier: str) -> bool:
    """Whether the object's docstring (found statically) holds a `>>>` example."""
    obj = _static_object(identifier)
    return bool(obj is not None and obj.docstring and ">>>" in obj.docstring.value)


def _borrows_call_arguments(identifier: str) -> bool:
    """Whether the object's `Call arguments:` are another layer's (``As `Layer`'s``, filled
    in by `griffe_keras.KerasDocstrings`)."""
    obj = _static_object(identifier)
    text = obj.docstring.value if obj is not None and obj.docstring else ""
    return bool(re.search(r"Call arguments:\s*\n\s*As `\w+`'s", text))


_QUERY_ROW = re.compile(r"Call arguments:.*?<code>query</code>\s*</td>", re.DOTALL)


def on_post_build(config, **kwargs):
    site = Path(config["site_dir"])
    problems = []
    for page in {p.path: p for p in public_api.pages().values()}.values():
        out = site / page.path.replace("index.md", "").replace(".md", "/") / "index.html"
        if not out.is_file():
            problems.append(f"{page.path}: no {out}")
            continue
        text = out.read_text(encoding="utf-8")
        rendered = (
            'class="doc doc-object doc-module"' in text
            if page.kind == "module"
            else f'id="{page.identifier}"' in text
        )
        if not rendered:
            problems.append(f"{page.path}: no rendered heading for {page.identifier}")
        if page.kind == "name" and _has_examples(page.identifier):
            if not _EXAMPLE_BLOCK.search(text):
                problems.append(f"{page.path}: the docstring's example is not a code block")
        if page.kind == "name" and _borrows_call_arguments(page.identifier):
            if not _QUERY_ROW.search(text):
                problems.append(f"{page.path}: the call arguments it borrows are not rendered")
    if problems:
        raise PluginError("API reference incomplete:\n  " + "\n  ".join(problems))

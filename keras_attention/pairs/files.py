"""Reading TSV files of string pairs (`source<TAB>target`) with errors that name file and line."""

from __future__ import annotations

import os
import sys
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = [
    "Pairs",
    "PairsFileError",
    "normalize_source",
    "read_pairs",
    "read_raw_pairs",
    "read_sources",
]


class PairsFileError(ValueError):
    """A pairs or sources file that cannot be read: the message names the file and line."""


def normalize_source(text: str) -> str:
    """A source as the model reads it: Unicode NFC, whitespace runs collapsed to one space,
    no leading or trailing whitespace (what `keras_attention.text.normalize_text` does in the
    exported graph, after NFC).

    Example:

    >>> normalize_source(" cafe\\u0301 ")
    'café'
    """
    return " ".join(unicodedata.normalize("NFC", text).split())


def split_target(text: str, target_chars: bool = False) -> tuple[str, ...]:
    """A target's symbols: space-separated (`"N AY F"` → 3 symbols), or each character with
    `target_chars` (spaces dropped)."""
    text = unicodedata.normalize("NFC", text)
    return tuple(c for c in text if not c.isspace()) if target_chars else tuple(text.split())


@dataclass
class Pairs:
    """The pairs of one file, grouped by source.

    Attributes:
        sources: Each distinct source once, in the order of first appearance.
        references: `references[i]`: the distinct targets (symbol tuples) of `sources[i]`, in
            file order (a source may have several correct targets).
        path: The file read.
    """

    sources: list[str]
    references: list[list[tuple[str, ...]]]
    path: str = ""
    lines: int = field(default=0)

    def pairs(self) -> list[tuple[str, tuple[str, ...]]]:
        """Every `(source, target)`, a source once per reference."""
        return [(s, r) for s, refs in zip(self.sources, self.references) for r in refs]

    def __len__(self) -> int:
        return len(self.sources)


def _lines(path: str | os.PathLike, argument: str) -> Iterable[tuple[int, str]]:
    """`(line number, text)` of a UTF-8 file (`-`: standard input), newline removed."""
    if str(path) == "-":
        data = sys.stdin.buffer.read()
        name = "<stdin>"
    else:
        name = os.fspath(path)
        if not os.path.isfile(name):
            raise PairsFileError(f"`{argument}` must be a readable file. Received: {name!r}")
        with open(name, "rb") as f:
            data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise PairsFileError(
            f"{name}:{line}: not UTF-8 (byte {data[error.start]:#04x} at offset "
            f"{error.start}); save the file as UTF-8. Received: {argument}={name!r}"
        ) from None
    if text.startswith("\ufeff"):  # a byte-order mark
        text = text[1:]
    for number, line in enumerate(text.splitlines(), start=1):
        yield number, line


def read_raw_pairs(
    path: str | os.PathLike, *, extra_columns: bool = False, argument: str = "path"
) -> list[tuple[str, str]]:
    """The `(source, target)` strings of each `source<TAB>target` line, in file order, each
    stripped of surrounding whitespace (UTF-8; blank lines skipped; nothing else changed).

    What `read_pairs` reads before normalising and grouping; for pairs whose targets are
    free text (sentences, dates) rather than symbols.

    Args:
        path: The file, or `"-"` for standard input.
        extra_columns: Ignore columns after the second (Anki's and Tatoeba's exports add an
            attribution) instead of refusing the line. Defaults to `False`.
        argument: The argument name the errors give (`"--train"`). Defaults to `"path"`.

    Raises:
        PairsFileError: the file is missing, not UTF-8, holds no pair, or a line has no tab,
            more than one (unless `extra_columns`), an empty source or an empty target; the
            message names the file and line.

    Example:

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "fra.tsv"
    >>> _ = path.write_text("Go.\\tVa !\\tCC-BY 2.0 (France)\\n", encoding="utf-8")
    >>> read_raw_pairs(path, extra_columns=True)
    [('Go.', 'Va !')]
    """
    name = "<stdin>" if str(path) == "-" else os.fspath(path)
    pairs = []
    for number, line in _lines(path, argument):
        if not line.strip():
            continue
        fields = line.split("\t")
        where = f"{name}:{number}"
        if len(fields) == 1 or (len(fields) > 2 and not extra_columns):
            problem = "has no tab" if len(fields) == 1 else f"has {len(fields) - 1} tabs"
            raise PairsFileError(
                f"{where}: the line {problem}; each line must be `source<TAB>target`. "
                f"Received: {line[:80]!r}"
            )
        for part, text in zip(("source", "target"), fields):
            if not text.strip():
                raise PairsFileError(f"{where}: the {part} is empty. Received: {line[:80]!r}")
        pairs.append((fields[0].strip(), fields[1].strip()))
    if not pairs:
        raise PairsFileError(f"{name}: no `source<TAB>target` line. Received: {argument}={name!r}")
    return pairs


def read_pairs(
    path: str | os.PathLike, target_chars: bool = False, argument: str = "path"
) -> Pairs:
    """Read `source<TAB>target` lines (UTF-8; blank lines skipped): `read_raw_pairs`, then
    grouped by source.

    Sources are NFC-normalised (`normalize_source`); targets are split into symbols on
    spaces, or into characters with `target_chars`. The same source on several lines gives
    several references.

    Args:
        path: The file, or `"-"` for standard input.
        target_chars: Targets are characters, not space-separated symbols. Defaults to
            `False`.
        argument: The argument name the errors give (`"--train"`). Defaults to `"path"`.

    Raises:
        PairsFileError: as `read_raw_pairs`.
    """
    index: dict[str, int] = {}
    sources: list[str] = []
    references: list[list[tuple[str, ...]]] = []
    raw = read_raw_pairs(path, argument=argument)
    for source, target in raw:
        source, target = normalize_source(source), split_target(target, target_chars)
        if source not in index:
            index[source] = len(sources)
            sources.append(source)
            references.append([])
        refs = references[index[source]]
        if target not in refs:
            refs.append(target)
    name = "<stdin>" if str(path) == "-" else os.fspath(path)
    return Pairs(sources, references, name, len(raw))


def read_sources(path: str | os.PathLike = "-", argument: str = "path") -> list[str]:
    """Sources to decode, one a line (UTF-8; `"-"`: standard input), NFC-normalised. A line
    with a tab keeps what comes before it (so a pairs file can be decoded as it is); blank
    lines are skipped."""
    return [
        normalize_source(line.split("\t", 1)[0])
        for _, line in _lines(path, argument)
        if line.split("\t", 1)[0].strip()
    ]

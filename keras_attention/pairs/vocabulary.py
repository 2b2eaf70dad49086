"""`Vocabulary`: symbols ↔ ids with the package's special ids `0..3` first."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["SPECIAL_TOKENS", "Vocabulary"]

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[START]", "[END]")
PAD_ID, UNK_ID, START_ID, END_ID = 0, 1, 2, 3


class Vocabulary:
    """Symbols (characters of a source, symbols of a target) ↔ ids: `[PAD]`, `[UNK]`,
    `[START]`, `[END]` are ids `0..3`, the symbols follow in sorted order from id 4, as
    `keras_attention.text`'s tokenizers number a given vocabulary (`CharTokenizer` for
    characters, `SymbolTokenizer` for symbols), so the exports' tokenizers agree with it.

    >>> vocabulary = Vocabulary("abba")
    >>> vocabulary.symbols, vocabulary.encode("abc"), vocabulary.decode([5, 4, 3, 4])
    (['a', 'b'], [4, 5, 1], ('b', 'a'))
    """

    def __init__(self, symbols: Iterable[str]) -> None:
        self.symbols = sorted(set(symbols))
        for i, symbol in enumerate(self.symbols):
            if not isinstance(symbol, str) or not symbol or symbol in SPECIAL_TOKENS:
                raise ValueError(
                    "`symbols` must be non-empty strings other than the special tokens "
                    f"{SPECIAL_TOKENS}. Received: symbols[{i}]={symbol!r}"
                )
        self.tokens = [*SPECIAL_TOKENS, *self.symbols]
        self.index = {s: i for i, s in enumerate(self.tokens)}

    def __len__(self) -> int:
        return len(self.tokens)

    def encode(self, symbols: Sequence[str]) -> list[int]:
        """Ids of `symbols`; an unknown symbol is `[UNK]` (1)."""
        return [self.index.get(s, UNK_ID) if s not in SPECIAL_TOKENS else UNK_ID for s in symbols]

    def decode(self, ids: Iterable[int]) -> tuple[str, ...]:
        """Symbols of `ids` up to the first `[END]` or padding; `[START]` skipped, `[UNK]`
        and ids outside the vocabulary read `[UNK]`."""
        out = []
        for i in np.asarray(ids).tolist():
            if i in (PAD_ID, END_ID):
                break
            if i == START_ID:
                continue
            out.append(self.tokens[i] if UNK_ID < i < len(self.tokens) else "[UNK]")
        return tuple(out)

    def encode_batch(self, sequences: Sequence[Sequence[str]], length: int | None = None):
        """`[N, length]` int32 ids, each row `ids + [END]` then 0s (the encoder's input)."""
        rows = [self.encode(s) for s in sequences]
        length = length or max(len(r) for r in rows) + 1
        out = np.zeros((len(rows), length), "int32")
        for i, row in enumerate(rows):
            out[i, : len(row) + 1] = [*row, END_ID]
        return out

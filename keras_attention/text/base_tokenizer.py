"""`BaseTokenizer`: what the character and wordpiece tokenizers share, and the special ids."""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from keras_attention._validation import check_flag, check_int
from keras_attention.text._inputs import (
    decoded_strings,
    id_batch,
    normalized_text_dataset,
    string_batch,
)
from keras_attention.text.normalize import normalize_text

__all__ = ["END_ID", "PAD_ID", "SPECIAL_TOKENS", "START_ID", "UNK_ID", "BaseTokenizer"]

PAD_ID = 0
UNK_ID = 1
START_ID = 2
END_ID = 3
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[START]", "[END]")


def _sorted_ids(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`(sorted keys, their ids)`: the vocabulary's lookup keys (code points, fingerprints) in
    ascending order and each one's id (`index + 4`); with no keys, `-1` (a key that never
    occurs) mapped to `UNK_ID`."""
    if not len(keys):
        return np.array([-1], keys.dtype), np.array([UNK_ID], np.int32)
    order = np.argsort(keys, kind="stable")
    return keys[order], (order + len(SPECIAL_TOKENS)).astype(np.int32)


def _lookup_sorted(flat: tf.Tensor, sorted_keys: np.ndarray, ids: np.ndarray) -> tf.Tensor:
    """The ids of `flat`'s keys by a binary search in `sorted_keys` (`_sorted_ids`), `UNK_ID`
    for a key not there: core TensorFlow ops only, no lookup-table resource."""
    known = tf.constant(sorted_keys)
    position = tf.searchsorted(known, flat, side="left", out_type=tf.int32)
    position = tf.minimum(position, len(sorted_keys) - 1)
    found = tf.equal(tf.gather(known, position), flat)
    return tf.where(found, tf.gather(tf.constant(ids), position), UNK_ID)


class BaseTokenizer:
    """Strings `[B]` ↔ padded ids `[B, L]`, in-graph; subclasses define what a token is.

    Ids `0..3` are always `[PAD]`, `[UNK]`, `[START]`, `[END]`; the learned or given
    vocabulary follows from id 4. Subclasses implement `_check_token`, `_learn`,
    `_build`, `_tokenize_ragged` and `_detokenize_ragged`.

    Args:
        vocabulary: Optional list of tokens, without the special tokens (token `i` gets id
            `i + 4`). Leave `None` and call `adapt(texts)` to learn one. Defaults to `None`.
        lowercase: Whether `normalize_text` lowercases the input. Defaults to `False`.
        max_vocabulary: Optional maximum `vocabulary_size`, the 4 special tokens included
            (so at least 5). Defaults to `None`.
        min_frequency: Tokens seen fewer times than this in `adapt`'s texts are not learned.
            Defaults to `1`.
    """

    def __init__(
        self,
        vocabulary: Sequence[str] | None = None,
        lowercase: bool = False,
        max_vocabulary: int | None = None,
        min_frequency: int = 1,
    ) -> None:
        self._lowercase = check_flag("lowercase", lowercase)
        if max_vocabulary is not None:
            max_vocabulary = check_int(
                "max_vocabulary", max_vocabulary, minimum=len(SPECIAL_TOKENS) + 1
            )
        self._max_vocabulary = max_vocabulary
        self._min_frequency = check_int("min_frequency", min_frequency, minimum=1)
        self._tokens: list[str] | None = None
        if vocabulary is not None:
            tokens = self._check_vocabulary(vocabulary)
            if self._max_vocabulary is not None and len(tokens) + 4 > self._max_vocabulary:
                raise ValueError(
                    f"`vocabulary` has {len(tokens)} tokens, which with the 4 special tokens "
                    f"exceeds max_vocabulary={self._max_vocabulary}. Received: "
                    f"len(vocabulary)={len(tokens)}"
                )
            self._set_tokens(tokens)

    # ------------------------------------------------------------------ vocabulary
    def adapt(self, texts: Any) -> None:
        """Learn the vocabulary from training text (replacing any previous vocabulary).

        The text is normalised exactly as `tokenize` normalises it. The result is
        deterministic: the same texts in the same order give the same vocabulary.

        Args:
            texts: A list/tuple of `str`, a 1-D numpy array of `str`/`bytes`, a rank-1
                `tf.string` tensor, or a `tf.data.Dataset` of scalar (or rank-1) strings.
        """
        dataset = normalized_text_dataset("texts", texts, lowercase=self._lowercase)
        tokens = self._learn(dataset)
        if self._max_vocabulary is not None:
            tokens = tokens[: self._max_vocabulary - len(SPECIAL_TOKENS)]
        self._set_tokens(tokens)

    def _set_tokens(self, tokens: list[str]) -> None:
        self._tokens = list(tokens)
        self._build()

    def _check_vocabulary(self, vocabulary: Any) -> list[str]:
        if isinstance(vocabulary, np.ndarray) and vocabulary.ndim == 1:
            vocabulary = vocabulary.tolist()
        if isinstance(vocabulary, (str, bytes)) or not isinstance(vocabulary, Sequence):
            raise TypeError(
                f"`vocabulary` must be a list of token strings. Received: "
                f"vocabulary={vocabulary!r:.200}"
            )
        seen: set[str] = set()
        for index, token in enumerate(vocabulary):
            if not isinstance(token, str):
                raise TypeError(
                    f"`vocabulary` must contain only `str` tokens. Received: "
                    f"vocabulary[{index}]={token!r} (of type {type(token).__name__})"
                )
            if token in SPECIAL_TOKENS:
                raise ValueError(
                    f"`vocabulary` must not contain the special tokens {SPECIAL_TOKENS} (they "
                    f"are always ids 0-3). Received: vocabulary[{index}]={token!r}"
                )
            if token in seen:
                raise ValueError(
                    f"`vocabulary` must not contain duplicates. Received: "
                    f"vocabulary[{index}]={token!r}, a repeat"
                )
            self._check_token(index, token)
            seen.add(token)
        return [str(token) for token in vocabulary]

    def _require_vocabulary(self) -> list[str]:
        if self._tokens is None:
            raise ValueError(
                f"This {type(self).__name__} has no vocabulary yet: call adapt(texts) first or "
                f"pass vocabulary= to the constructor."
            )
        return self._tokens

    @property
    def vocabulary(self) -> list[str]:
        """The full vocabulary, special tokens first: `vocabulary[i]` is the token of id `i`."""
        return list(SPECIAL_TOKENS) + self._require_vocabulary()

    @property
    def vocabulary_size(self) -> int:
        """Number of ids, the 4 special tokens included (the `Embedding`/`Dense` size)."""
        return len(SPECIAL_TOKENS) + len(self._require_vocabulary())

    @property
    def lowercase(self) -> bool:
        return self._lowercase

    @property
    def pad_id(self) -> int:
        return PAD_ID

    @property
    def unk_id(self) -> int:
        return UNK_ID

    @property
    def start_id(self) -> int:
        return START_ID

    @property
    def end_id(self) -> int:
        return END_ID

    # ------------------------------------------------------------------ strings <-> ids
    def tokenize(self, strings: Any, add_start: bool = False, add_end: bool = False) -> tf.Tensor:
        """Normalise and tokenize a batch of strings into right-padded ids.

        Runs in-graph (e.g. in a `tf.function` with a `tf.TensorSpec([None], tf.string)`
        input or a `tf.data` map). Unknown tokens become `UNK_ID`; an empty string gives an
        empty row (only padding, or just the start/end ids).

        Args:
            strings: A list/tuple of `str`, a 1-D numpy array or a rank-1 `tf.string`
                tensor `[B]`.
            add_start: Whether to put `START_ID` first in every row. Defaults to `False`.
            add_end: Whether to put `END_ID` last in every row. Defaults to `False`.

        Returns:
            `tf.int32` ids `[B, L]`, padded with `PAD_ID` (0) on the right, `L` the longest
            row in the batch.
        """
        self._require_vocabulary()
        strings = string_batch("strings", strings)
        add_start = check_flag("add_start", add_start)
        add_end = check_flag("add_end", add_end)
        ragged = self._tokenize_ragged(normalize_text(strings, lowercase=self._lowercase))
        pieces = [ragged]
        if add_start:
            pieces.insert(0, self._column(ragged, START_ID))
        if add_end:
            pieces.append(self._column(ragged, END_ID))
        if len(pieces) > 1:
            ragged = tf.concat(pieces, axis=1)
        return ragged.to_tensor(default_value=PAD_ID)

    @staticmethod
    def _column(ragged: tf.RaggedTensor, token_id: int) -> tf.RaggedTensor:
        column = tf.fill(tf.stack([ragged.nrows(out_type=tf.int32), 1]), token_id)
        return tf.RaggedTensor.from_tensor(column, row_splits_dtype=ragged.row_splits.dtype)

    def detokenize(self, ids: Any) -> tf.Tensor:
        """Turn ids `[B, L]` back into strings.

        `PAD_ID` and `START_ID` are dropped, each row stops at its first `END_ID` (what
        follows is ignored), and `UNK_ID` (or an id outside the vocabulary) is written as the
        tokenizer's unknown text. Runs in-graph.

        Args:
            ids: Integer ids `[B, L]` (numpy or tensor, int32 or int64).

        Returns:
            A `tf.string` tensor `[B]`.
        """
        size = self.vocabulary_size
        ids = id_batch("ids", ids)
        ids = tf.where((ids >= 0) & (ids < size), ids, UNK_ID)
        ended = tf.cumsum(tf.cast(tf.equal(ids, END_ID), tf.int32), axis=1) > 0
        keep = ~ended & tf.not_equal(ids, PAD_ID) & tf.not_equal(ids, START_ID)
        return self._detokenize_ragged(tf.ragged.boolean_mask(ids, keep))

    # ------------------------------------------------------------------ serialisation
    def get_config(self) -> dict:
        """The constructor arguments, the vocabulary included (JSON-serialisable)."""
        return {
            "vocabulary": None if self._tokens is None else list(self._tokens),
            "lowercase": self._lowercase,
            "max_vocabulary": self._max_vocabulary,
            "min_frequency": self._min_frequency,
        }

    @classmethod
    def from_config(cls, config: dict) -> BaseTokenizer:
        return cls(**config)

    def __repr__(self) -> str:
        size = "not adapted" if self._tokens is None else f"vocabulary_size={self.vocabulary_size}"
        return f"{type(self).__name__}({size}, lowercase={self._lowercase})"

    # ------------------------------------------------------------------ subclass hooks
    def _check_token(self, index: int, token: str) -> None:
        """Raise a `ValueError` naming `vocabulary[index]` if `token` is not a valid token."""

    def _learn(self, dataset: tf.data.Dataset) -> list[str]:
        """The sorted tokens (no specials) learned from a dataset of normalised string batches."""
        raise NotImplementedError

    def _most_frequent(
        self, dataset: tf.data.Dataset, units: Callable[[str], Iterable[str]]
    ) -> list[str]:
        """The tokens `units(text)` gives over `dataset`'s texts, seen at least `min_frequency`
        times, most frequent first (ties in code-point order): `_learn` for token kinds that a
        Python split finds."""
        counts: collections.Counter = collections.Counter()
        for text in decoded_strings(dataset, "texts"):
            counts.update(units(text))
        kept = [(token, n) for token, n in counts.items() if n >= self._min_frequency]
        return [token for token, _ in sorted(kept, key=lambda item: (-item[1], item[0]))]

    def _build(self) -> None:
        """Precompute the (numpy) constants for the current `self._tokens`."""

    def _tokenize_ragged(self, normalized: tf.Tensor) -> tf.RaggedTensor:
        """Normalised strings `[B]` → ragged int32 ids `[B, None]`."""
        raise NotImplementedError

    def _detokenize_ragged(self, ids: tf.RaggedTensor) -> tf.Tensor:
        """Ragged int32 ids `[B, None]` (no pad/start/end) → strings `[B]`."""
        raise NotImplementedError

"""`SymbolTokenizer`: space-separated symbols (phonemes, tags), core TensorFlow ops only."""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from keras_attention.text.base_tokenizer import BaseTokenizer, _lookup_sorted, _sorted_ids

__all__ = ["SymbolTokenizer"]

_HASH_BUCKETS = 2**62


@keras.saving.register_keras_serializable(package="keras_attention")
class SymbolTokenizer(BaseTokenizer):
    """Symbol-level tokenizer: one id per whitespace-separated symbol, in-graph.

    For targets written as symbols separated by spaces (`"N AY F"`: phonemes, morphological
    tags). Strings are normalised with `normalize_text` and split on spaces; symbols are
    mapped to ids by a binary search (`tf.searchsorted`) among the 62-bit fingerprints
    (`tf.strings.to_hash_bucket_fast`) of the vocabulary's symbols, so the graphs hold only
    core TensorFlow ops and no lookup-table resource. Two vocabulary symbols with one
    fingerprint are refused at construction; an unknown symbol sharing a known one's
    fingerprint (odds about `vocabulary_size / 2**62`) would read as that symbol.
    `detokenize` joins the symbols with single spaces; unknown ids read `[UNK]`.
    TensorFlow only.

    Args:
        vocabulary: Optional list of symbols (non-empty, without whitespace), without the
            special tokens (symbol `i` gets id `i + 4`). Leave `None` and call
            `adapt(texts)` to learn one. Defaults to `None`.
        lowercase: Whether to lowercase before tokenizing. Defaults to `False`.
        max_vocabulary: Optional maximum `vocabulary_size`, the 4 special tokens included.
            Defaults to `None` (no limit).
        min_frequency: `adapt` drops symbols seen fewer times. Defaults to `1`.

    Example:

    >>> tokenizer = SymbolTokenizer(vocabulary=["AY", "F", "N"])
    >>> tokenizer.tokenize(["N AY F", "F OW"], add_end=True).numpy().tolist()
    [[6, 4, 5, 3], [5, 1, 3, 0]]
    >>> [s.decode() for s in tokenizer.detokenize([[6, 4, 5, 3]]).numpy()]
    ['N AY F']
    """

    def _check_token(self, index: int, token: str) -> None:
        if not token or token != "".join(token.split()):
            raise ValueError(
                "`vocabulary` entries of a SymbolTokenizer must be non-empty and hold no "
                f"whitespace. Received: vocabulary[{index}]={token!r}"
            )

    def _learn(self, dataset: tf.data.Dataset) -> list[str]:
        return self._most_frequent(dataset, str.split)

    def _build(self) -> None:
        tokens = list(self._tokens)
        if tokens:
            hashes = tf.strings.to_hash_bucket_fast(tokens, _HASH_BUCKETS).numpy()
        else:
            hashes = np.zeros([0], np.int64)
        if len(set(hashes.tolist())) != len(hashes):
            raise ValueError(
                "Two `vocabulary` symbols share a fingerprint; rename one. Received: "
                f"vocabulary={tokens!r}"
            )
        self._sorted_hashes, self._sorted_ids = _sorted_ids(hashes)
        self._id_symbols = np.array(["", "[UNK]", "", "", *tokens], dtype=object)

    def _tokenize_ragged(self, normalized: tf.Tensor) -> tf.RaggedTensor:
        symbols = tf.strings.split(normalized)
        flat = tf.strings.to_hash_bucket_fast(symbols.flat_values, _HASH_BUCKETS)
        ids = _lookup_sorted(flat, self._sorted_hashes, self._sorted_ids)
        return symbols.with_flat_values(ids)

    def _detokenize_ragged(self, ids: tf.RaggedTensor) -> tf.Tensor:
        symbols = tf.gather(tf.constant(self._id_symbols.astype(str)), ids.flat_values)
        return tf.strings.reduce_join(ids.with_flat_values(symbols), axis=1, separator=" ")

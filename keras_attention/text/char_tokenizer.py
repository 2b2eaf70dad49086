"""`CharTokenizer`: Unicode code point tokenization, core TensorFlow ops only in its graphs."""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from keras_attention.text.base_tokenizer import BaseTokenizer, _lookup_sorted, _sorted_ids

__all__ = ["CharTokenizer"]

_REPLACEMENT_CHARACTER = 0xFFFD


@keras.saving.register_keras_serializable(package="keras_attention")
class CharTokenizer(BaseTokenizer):
    """Character-level tokenizer: one id per Unicode code point, in-graph.

    Strings are normalised with `normalize_text` (whitespace collapsed, optionally
    lowercased), split into code points with `tensorflow_text.UnicodeCharTokenizer` and
    mapped to ids by a binary search (`tf.searchsorted`) in a constant array of the
    vocabulary's code points: no lookup-table resource, and the graphs contain only core
    TensorFlow ops, so a SavedModel using them loads without `import tensorflow_text`.
    Ids `0..3` are `[PAD]`, `[UNK]`, `[START]`, `[END]`; unknown characters become `UNK_ID`
    and detokenize to U+FFFD (`"\\ufffd"`). TensorFlow only.

    Args:
        vocabulary: Optional list of single characters, without the special tokens
            (character `i` gets id `i + 4`). Leave `None` and call `adapt(texts)` to learn
            one. Defaults to `None`.
        lowercase: Whether to lowercase (Unicode-aware) before tokenizing. Defaults to
            `False`.
        max_vocabulary: Optional maximum `vocabulary_size`, the 4 special tokens included;
            `adapt` keeps the most frequent characters. Defaults to `None` (no limit).
        min_frequency: `adapt` drops characters seen fewer times. Defaults to `1`.

    Example:

    >>> tokenizer = CharTokenizer()
    >>> tokenizer.adapt(["abba", "cab"])
    >>> tokenizer.vocabulary
    ['[PAD]', '[UNK]', '[START]', '[END]', 'a', 'b', 'c']
    >>> ids = tokenizer.tokenize(["ab", "cd", ""], add_end=True)
    >>> ids.numpy().tolist()
    [[4, 5, 3], [6, 1, 3], [3, 0, 0]]
    >>> [s.decode() for s in tokenizer.detokenize(ids).numpy()] == ["ab", "c\\ufffd", ""]
    True
    """

    def _check_token(self, index: int, token: str) -> None:
        if len(token) != 1:
            raise ValueError(
                "`vocabulary` entries of a CharTokenizer must be exactly one character "
                f"(code point). Received: vocabulary[{index}]={token!r}"
            )

    def _learn(self, dataset: tf.data.Dataset) -> list[str]:
        return self._most_frequent(dataset, lambda text: text)  # its characters

    def _build(self) -> None:
        code_points = np.array([ord(char) for char in self._tokens], dtype=np.int32)
        self._sorted_code_points, self._sorted_ids = _sorted_ids(code_points)
        specials = np.array([0, _REPLACEMENT_CHARACTER, 0, 0], dtype=np.int32)
        self._id_code_points = np.concatenate([specials, code_points])

    def _tokenize_ragged(self, normalized: tf.Tensor) -> tf.RaggedTensor:
        code_points = tf_text.UnicodeCharTokenizer().tokenize(normalized)
        ids = _lookup_sorted(code_points.flat_values, self._sorted_code_points, self._sorted_ids)
        return code_points.with_flat_values(ids)

    def _detokenize_ragged(self, ids: tf.RaggedTensor) -> tf.Tensor:
        code_points = tf.gather(tf.constant(self._id_code_points), ids.flat_values)
        return tf.strings.unicode_encode(ids.with_flat_values(code_points), "UTF-8")

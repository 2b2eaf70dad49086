"""`WordpieceTokenizer`: word/subword tokenization with tf-text's `FastWordpieceTokenizer`."""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow_text.core.pybinds import pywrap_fast_wordpiece_tokenizer_model_builder
from tensorflow_text.tools.wordpiece_vocab.bert_vocab_from_dataset import bert_vocab_from_dataset

from keras_attention.text.base_tokenizer import SPECIAL_TOKENS, UNK_ID, BaseTokenizer

__all__ = ["WordpieceTokenizer"]

_DEFAULT_MAX_VOCABULARY = 8000
_SUFFIX_INDICATOR = "##"
_MAX_BYTES_PER_WORD = 100
_PLACEHOLDER_TOKEN = "\U0010ffff"  # a noncharacter, stands in for an empty vocabulary


@keras.saving.register_keras_serializable(package="keras_attention")
class WordpieceTokenizer(BaseTokenizer):
    """Word/subword (WordPiece) tokenizer, in-graph, for translation models.

    Strings are normalised with `normalize_text`, split into words on whitespace and
    punctuation (each punctuation mark and each CJK character is a word of its own) and the
    words into wordpieces by `tensorflow_text.FastWordpieceTokenizer` (suffix pieces are
    spelled `"##piece"`). A word that cannot be spelled with the vocabulary, or is longer than
    100 bytes, becomes one `UNK_ID`. `detokenize` joins the words with single spaces, so
    punctuation and CJK characters come back space-separated (`"it's"` →
    `"it ' s"`); UNK comes back as `"[UNK]"`. Ids `0..3` are `[PAD]`, `[UNK]`, `[START]`,
    `[END]`.

    TensorFlow only. The wordpiece model is a constant buffer in the graph (no resource to
    track), but it runs tf-text custom ops: a SavedModel that uses this tokenizer needs
    `import tensorflow_text` before `tf.saved_model.load` (and a TF Serving build with the
    tf-text ops).

    `adapt` learns the vocabulary with tf-text's
    `bert_vocab_from_dataset` (the BERT wordpiece learner, pure Python: minutes for
    hundreds of megabytes of text) aiming at `max_vocabulary` ids. Its order is the
    learner's, deterministic for the same texts: every single character (sorted), then the
    learned pieces and `"##"` suffix characters by frequency (descending, ties by token).

    Args:
        vocabulary: Optional list of wordpieces without the special tokens (piece `i` gets
            id `i + 4`). Leave `None` and call `adapt(texts)` to learn one. Defaults to
            `None`.
        lowercase: Whether to lowercase (Unicode-aware) before tokenizing. Defaults to
            `False`.
        max_vocabulary: Optional maximum `vocabulary_size`, the 4 special tokens included;
            the learner's target size. Defaults to `None` (a target of 8000).
        min_frequency: The smallest count a piece needs to be learned (the learner's
            `lower_thresh`; single characters are always kept). Defaults to `1`.

    Example:

    >>> tokenizer = WordpieceTokenizer(lowercase=True, min_frequency=2)
    >>> tokenizer.adapt(["the cat sat", "the cats sat", "a cat"])
    >>> ids = tokenizer.tokenize(["The cats", "the dog"], add_start=True, add_end=True)
    >>> [tokenizer.vocabulary[i] for i in ids.numpy()[0]]
    ['[START]', 'the', 'cat', '##s', '[END]']
    >>> [s.decode() for s in tokenizer.detokenize(ids).numpy()]
    ['the cats', 'the [UNK]']
    """

    def _check_token(self, index: int, token: str) -> None:
        if not token or token == _SUFFIX_INDICATOR or any(char.isspace() for char in token):
            raise ValueError(
                "`vocabulary` entries of a WordpieceTokenizer must be non-empty words or "
                f"'##'-prefixed suffixes without whitespace. Received: vocabulary[{index}]="
                f"{token!r}"
            )

    def _learn(self, dataset: tf.data.Dataset) -> list[str]:
        target = self._max_vocabulary or _DEFAULT_MAX_VOCABULARY
        try:
            learned = bert_vocab_from_dataset(
                dataset,
                vocab_size=target,
                reserved_tokens=list(SPECIAL_TOKENS),
                bert_tokenizer_params={"lower_case": False},
                learn_params={"lower_thresh": self._min_frequency},
            )
        except StopIteration:  # tf-text's word counter found no word at all
            if not any(len(batch) for batch in dataset.as_numpy_iterator()):
                raise ValueError(
                    "`texts` must not be empty. Received: a dataset with no strings"
                ) from None
            return []
        if tuple(learned[: len(SPECIAL_TOKENS)]) != SPECIAL_TOKENS:  # pragma: no cover
            raise RuntimeError(f"Unexpected vocabulary from bert_vocab_from_dataset: {learned}")
        return [token for token in learned[len(SPECIAL_TOKENS) :] if token not in SPECIAL_TOKENS]

    def _build(self) -> None:
        # tf-text cannot build a model without a single usable token: with an empty
        # vocabulary, give it a placeholder (and map every piece to UNK in `_tokenize_ragged`).
        tokens = self._tokens or [_PLACEHOLDER_TOKEN]
        model = pywrap_fast_wordpiece_tokenizer_model_builder.build_fast_wordpiece_model(
            list(SPECIAL_TOKENS) + tokens,
            _MAX_BYTES_PER_WORD,
            _SUFFIX_INDICATOR,
            SPECIAL_TOKENS[1],  # unknown_token
            False,  # no_pretokenization
            True,  # support_detokenization
        )
        self._model_buffer = np.frombuffer(model, dtype=np.uint8)

    def _fast_wordpiece(self) -> tf_text.FastWordpieceTokenizer:
        # Built from the model buffer at each call, so the buffer is a constant of the graph
        # being traced (not a captured eager tensor).
        return tf_text.FastWordpieceTokenizer(
            model_buffer=tf.constant(self._model_buffer), token_out_type=tf.int32
        )

    def _tokenize_ragged(self, normalized: tf.Tensor) -> tf.RaggedTensor:
        ids = self._fast_wordpiece().tokenize(normalized)
        if not self._tokens:
            ids = ids.with_flat_values(tf.fill(tf.shape(ids.flat_values), UNK_ID))
        return ids

    def _detokenize_ragged(self, ids: tf.RaggedTensor) -> tf.Tensor:
        return self._fast_wordpiece().detokenize(ids)

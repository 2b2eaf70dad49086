"""In-graph text pipelines for translation models: normalisation, tokenizers, datasets.

TensorFlow only (it needs `tensorflow` and `tensorflow-text`, whatever the Keras backend):
the tokenizers run inside the TensorFlow graph, so a `tf.function` taking raw strings
(`tf.TensorSpec([None], tf.string)`) can be exported in a SavedModel for TF Serving.
`normalize_text`, `CharTokenizer` and `SymbolTokenizer` graphs use core TensorFlow ops only
(they load without `tensorflow_text`); `WordpieceTokenizer` graphs need
`import tensorflow_text` to load.

Ids `0..3` are always `[PAD]`, `[UNK]`, `[START]`, `[END]` (`PAD_ID`, `UNK_ID`, `START_ID`,
`END_ID`, `SPECIAL_TOKENS`).
"""

try:
    import tensorflow  # noqa: F401
    import tensorflow_text  # noqa: F401
except ImportError as error:  # pragma: no cover
    raise ImportError(
        "`keras_attention.text` is TensorFlow-only and needs `tensorflow` and `tensorflow-text`"
        " (pip install tensorflow tensorflow-text, matching versions)."
    ) from error

from keras_attention.text.base_tokenizer import (
    END_ID,
    PAD_ID,
    SPECIAL_TOKENS,
    START_ID,
    UNK_ID,
)
from keras_attention.text.char_tokenizer import CharTokenizer
from keras_attention.text.datasets import pairs_dataset
from keras_attention.text.normalize import normalize_text
from keras_attention.text.symbol_tokenizer import SymbolTokenizer
from keras_attention.text.wordpiece_tokenizer import WordpieceTokenizer

__all__ = [
    "END_ID",
    "PAD_ID",
    "SPECIAL_TOKENS",
    "START_ID",
    "UNK_ID",
    "CharTokenizer",
    "SymbolTokenizer",
    "WordpieceTokenizer",
    "normalize_text",
    "pairs_dataset",
]

"""keras_attention: Bahdanau and Luong attention for Keras 3.

TensorFlow-only subpackages are imported on demand: `keras_attention.text` (tf-text
tokenizers) and `keras_attention.export` (SavedModel export for TF Serving).
`keras_attention.migrate.load_tfa_weights` imports TensorFlow when called.
"""

from keras_attention import decoding, functional, migrate, models
from keras_attention.cells import AttentionRNN, BahdanauAttentionCell, LuongAttentionCell
from keras_attention.layers import (
    AdditiveAttention,
    BahdanauAttention,
    BahdanauMonotonicAttention,
    LocationSensitiveAttention,
    LuongAttention,
    LuongMonotonicAttention,
)

__version__ = "0.2.0"

__all__ = [
    "AdditiveAttention",
    "AttentionRNN",
    "BahdanauAttention",
    "BahdanauAttentionCell",
    "BahdanauMonotonicAttention",
    "LocationSensitiveAttention",
    "LuongAttention",
    "LuongAttentionCell",
    "LuongMonotonicAttention",
    "__version__",
    "decoding",
    "functional",
    "migrate",
    "models",
]

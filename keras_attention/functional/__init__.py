"""Pure `keras.ops` functions with no weights: scores, masked softmax, local windows, loops,
hashed dropout."""

from keras_attention.functional.dropout import hashed_dropout, hashed_uniforms
from keras_attention.functional.loops import time_loop
from keras_attention.functional.monotonic import (
    location_features,
    monotonic_alignment,
    monotonic_probabilities,
    safe_cumprod,
)
from keras_attention.functional.scores import additive_scores, dot_scores, matmul, project
from keras_attention.functional.softmax import (
    mask_value,
    masked_hardmax,
    masked_softmax,
    masked_sparsemax,
    wide_float_dtype,
)
from keras_attention.functional.windows import (
    block_size,
    blocked_window_attention,
    expand_window_weights,
    gather_positions,
    gaussian_window,
    last_valid_positions,
    tile_sizes,
    tiled_window_attention,
    valid_lengths,
    window_dot_scores,
    window_positions,
    window_validity,
    window_weighted_sum,
)

__all__ = [
    "additive_scores",
    "block_size",
    "blocked_window_attention",
    "dot_scores",
    "expand_window_weights",
    "gather_positions",
    "gaussian_window",
    "hashed_dropout",
    "hashed_uniforms",
    "last_valid_positions",
    "location_features",
    "mask_value",
    "masked_hardmax",
    "masked_softmax",
    "masked_sparsemax",
    "matmul",
    "monotonic_alignment",
    "monotonic_probabilities",
    "project",
    "safe_cumprod",
    "tile_sizes",
    "tiled_window_attention",
    "time_loop",
    "valid_lengths",
    "window_dot_scores",
    "window_positions",
    "wide_float_dtype",
    "window_validity",
    "window_weighted_sum",
]

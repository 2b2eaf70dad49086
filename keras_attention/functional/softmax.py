"""Masked softmax: float32 inside, exact zeros on padding, zero rows when nothing is valid."""

from __future__ import annotations

import keras
from keras import ops

__all__ = ["masked_softmax", "wide_float_dtype"]

# Finite stand-in for -inf: large enough that exp(x - max) underflows to 0 in float32, small
# enough that x - max never overflows, so masked rows cannot produce inf - inf = NaN.
_MASK_VALUE = -1e9


def wide_float_dtype(dtype) -> str:
    """The dtype numerically sensitive steps run in: float64 stays, anything else is float32."""
    return "float64" if keras.backend.standardize_dtype(dtype) == "float64" else "float32"


def masked_softmax(scores, mask=None, axis: int = -1):
    """Softmax of `scores` over `axis` restricted to the positions where `mask` is true.

    The softmax is taken in float32 (float64 for float64 scores) whatever the dtype of
    `scores` (mixed precision safe),
    masked positions get exactly zero weight, and a row with no valid position gets all-zero
    weights (never NaN and never a uniform average of padding).

    Args:
        scores: Tensor of logits.
        mask: Optional boolean tensor broadcastable to `scores`; `True` marks valid positions.
            Defaults to `None` (every position valid).
        axis: The axis to normalise over. Defaults to `-1`.

    Returns:
        float32 (float64 for float64 scores) tensor of the shape of `scores`.

    Example:

    >>> import numpy as np
    >>> w = masked_softmax(np.zeros((1, 3)), np.array([[True, True, False]]))
    >>> np.asarray(w).round(3).tolist()
    [[0.5, 0.5, 0.0]]
    """
    scores = ops.convert_to_tensor(scores)
    scores = ops.cast(scores, wide_float_dtype(scores.dtype))
    if mask is not None:
        mask = ops.cast(mask, "bool")
    if scores.shape[axis] == 1:
        weights = ops.ones_like(scores)  # softmax over one position (Keras warns on it)
    elif mask is None:
        return ops.softmax(scores, axis=axis)
    else:
        # The fused softmax; masked logits underflow to exactly 0. Multiplying by the mask
        # also zeroes rows with no valid position (softmax makes them uniform).
        weights = ops.softmax(ops.where(mask, scores, _MASK_VALUE), axis=axis)
    if mask is None:
        return weights
    return weights * ops.cast(mask, weights.dtype)

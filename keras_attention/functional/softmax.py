"""Masked softmax: float32 inside, exact zeros on padding, zero rows when nothing is valid."""

from __future__ import annotations

import keras
import numpy as np
from keras import ops

from keras_attention.functional._checks import check_broadcastable

__all__ = ["mask_value", "masked_hardmax", "masked_softmax", "wide_float_dtype"]


def mask_value(dtype: str) -> float:
    """Finite stand-in for -inf: the lowest finite number of the softmax dtype.

    Below every valid logit however extreme (a fixed value such as -1e9 is not: a valid row of
    logits all under it would lose to its padding), finite so that a fully masked row never
    computes inf - inf = NaN. `x - max` may overflow to -inf, whose exp is exactly 0. The
    masked softmax and the fused Luong decoder (`cells/_fused_luong.py`) fill masked logits
    with it.

    Args:
        dtype: "float16", "bfloat16", "float32" or "float64" (or the NumPy dtype).

    Returns:
        A Python float.
    """
    try:
        name = keras.backend.standardize_dtype(dtype)
    except (TypeError, ValueError):
        name = None
    if name not in ("float16", "bfloat16", "float32", "float64"):
        raise ValueError(
            f"`dtype` must be float16, bfloat16, float32 or float64. Received: dtype={dtype!r}"
        )
    return float(np.finfo(name).min)


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
    dtype = wide_float_dtype(scores.dtype)
    scores = ops.cast(scores, dtype)
    if mask is not None:
        check_broadcastable("mask", mask, "scores", scores)
        mask = ops.cast(mask, "bool")
    if scores.shape[axis] == 1:
        weights = ops.ones_like(scores)  # softmax over one position (Keras warns on it)
    elif mask is None:
        return ops.softmax(scores, axis=axis)
    else:
        # The fused softmax; masked logits underflow to exactly 0. Multiplying by the mask
        # also zeroes rows with no valid position (softmax makes them uniform).
        lowest = ops.convert_to_tensor(mask_value(dtype), dtype)
        weights = ops.softmax(ops.where(mask, scores, lowest), axis=axis)
    if mask is None:
        return weights
    return weights * ops.cast(mask, weights.dtype)


def masked_hardmax(scores, mask=None, axis: int = -1):
    """One-hot weights on the highest score among the positions where `mask` is true.

    TensorFlow Addons' `hardmax` probability function (`one_hot(argmax(scores))`), restricted to
    the valid positions: ties go to the first (lowest) position, masked positions get exactly
    zero weight, and a row with no valid position gets all-zero weights (tfa would put its one
    on position 0, padding). The weights have no gradient with respect to the scores.

    Args:
        scores: Tensor of logits.
        mask: Optional boolean tensor broadcastable to `scores`; `True` marks valid positions.
            Defaults to `None` (every position valid).
        axis: The axis to take the argmax over. Defaults to `-1`.

    Returns:
        float32 (float64 for float64 scores) tensor of the shape of `scores`.

    Example:

    >>> import numpy as np
    >>> w = masked_hardmax(np.array([[1.0, 3.0, 5.0]]), np.array([[True, True, False]]))
    >>> np.asarray(w).tolist()
    [[0.0, 1.0, 0.0]]
    """
    scores = ops.convert_to_tensor(scores)
    dtype = wide_float_dtype(scores.dtype)
    scores = ops.cast(scores, dtype)
    if mask is not None:
        check_broadcastable("mask", mask, "scores", scores)
        mask = ops.cast(mask, "bool")
        scores = ops.where(mask, scores, ops.convert_to_tensor(mask_value(dtype), dtype))
    # `stop_gradient`: argmax has no gradient on TensorFlow, and a zero one elsewhere.
    # Compared with a range rather than `one_hot`: the length may be dynamic (symbolic models).
    index = ops.expand_dims(ops.argmax(ops.stop_gradient(scores), axis=axis), axis)
    length = ops.shape(scores)[axis]
    shape = [1] * len(scores.shape)
    shape[axis] = -1
    positions = ops.reshape(ops.arange(length, dtype=index.dtype), shape)
    weights = ops.cast(ops.equal(positions, index), dtype)
    if mask is None:
        return weights
    return weights * ops.cast(mask, dtype)

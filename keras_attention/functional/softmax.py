"""Masked softmax (and hardmax, sparsemax): float32 inside, exact zeros on padding, zero rows
when nothing is valid."""

from __future__ import annotations

import keras
import numpy as np
from keras import ops

from keras_attention.functional._checks import check_broadcastable

__all__ = [
    "mask_value",
    "masked_hardmax",
    "masked_softmax",
    "masked_sparsemax",
    "wide_float_dtype",
]


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


def masked_sparsemax(scores, mask=None, axis: int = -1):
    """Sparsemax (Martins & Astudillo, 2016) of `scores` over the positions where `mask` is true.

    The Euclidean projection of the scores onto the probability simplex:
    `p_i = max(z_i − τ, 0)`, with `τ` such that the `p_i` sum to 1. With the valid scores
    sorted in decreasing order `z_(1) ≥ z_(2) ≥ …`, the support size is
    `k = max{j : 1 + j z_(j) > Σ_{r ≤ j} z_(r)}` and `τ = (Σ_{r ≤ k} z_(r) − 1) / k`. Unlike
    the softmax, low scores get exactly zero weight. Masked positions take no part and get
    exactly zero weight, and a row with no valid position gets all-zero weights (never NaN).
    Gradients flow to the scores on the support (the sparsemax Jacobian:
    `∂p_i/∂z_j = δ_ij − 1/k` for `i, j` in the support, 0 elsewhere).

    Args:
        scores: Tensor of logits.
        mask: Optional boolean tensor broadcastable to `scores`; `True` marks valid positions.
            Defaults to `None` (every position valid).
        axis: The axis to normalise over. Defaults to `-1`.

    Returns:
        float32 (float64 for float64 scores) tensor of the shape of `scores`.

    Example:

    >>> import numpy as np
    >>> w = masked_sparsemax(np.array([[2.0, 1.5, 0.0, 9.0]]),
    ...                      np.array([[True, True, True, False]]))
    >>> np.asarray(w).tolist()
    [[0.75, 0.25, 0.0, 0.0]]

    References:
        Martins, Astudillo. From Softmax to Sparsemax: A Sparse Model of Attention and
        Multi-Label Classification. ICML 2016. https://arxiv.org/abs/1602.02068
    """
    scores = ops.convert_to_tensor(scores)
    dtype = wide_float_dtype(scores.dtype)
    scores = ops.cast(scores, dtype)
    if mask is not None:
        check_broadcastable("mask", mask, "scores", scores)
        valid = ops.logical_or(ops.cast(mask, "bool"), ops.zeros_like(scores, "bool"))
    else:
        valid = ops.ones_like(scores, "bool")
    last = len(scores.shape) - 1
    if axis % len(scores.shape) != last:  # computed over the last axis
        weights = masked_sparsemax(ops.moveaxis(scores, axis, -1), ops.moveaxis(valid, axis, -1))
        return ops.moveaxis(weights, -1, axis)
    # The support and τ come from the sorted scores without a gradient (they are piecewise
    # constant choices); τ itself is then a sum over the original scores, so the gradient is
    # sparsemax's own and no sort is differentiated. Masked scores sort last (the lowest
    # finite value) and are left out of every sum.
    lowest = ops.convert_to_tensor(mask_value(dtype), dtype)
    zeros = ops.zeros_like(scores)
    held = ops.stop_gradient(ops.where(valid, scores, lowest))
    ordered = -ops.sort(-held, axis=-1)  # decreasing
    count = ops.sum(ops.cast(valid, dtype), axis=-1, keepdims=True)
    ranks = ops.cast(ops.arange(1, ops.shape(scores)[-1] + 1), dtype)
    in_rows = ranks <= count  # the first `count` sorted entries are the valid ones
    cumulative = ops.cumsum(ops.where(in_rows, ordered, ops.zeros_like(ordered)), axis=-1)
    support = ops.logical_and(in_rows, 1.0 + ranks * ordered > cumulative)
    size = ops.sum(ops.cast(support, dtype), axis=-1, keepdims=True)  # k (0: nothing valid)
    # The smallest score in the support: a position is in it when its score reaches that.
    threshold = ops.min(ops.where(support, ordered, ops.full_like(ordered, np.inf)), axis=-1)
    chosen = ops.logical_and(valid, held >= ops.expand_dims(threshold, -1))
    total = ops.sum(ops.where(chosen, scores, zeros), axis=-1, keepdims=True)
    tau = (total - 1.0) / ops.maximum(size, 1.0)
    weights = ops.where(chosen, ops.maximum(scores - tau, 0.0), zeros)
    return weights

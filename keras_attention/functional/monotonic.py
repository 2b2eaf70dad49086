"""Monotonic attention (Raffel et al., 2017) and location features (Chorowski et al., 2015).

Monotonic attention turns "choosing" probabilities `p_i = sigmoid(e_i)` of the memory positions
and the previous alignment `α_{t-1}` into the expected alignment of a left-to-right reader that,
starting where it stopped at step `t - 1`, stops at position `i` with probability `p_i`:

    q_i = (1 − p_{i−1}) q_{i−1} + α_{t−1,i},   α_{t,i} = p_i q_i      (q_0 = α_{t−1,0})

Rows need not sum to 1 (the reader may run off the end of the memory). The three modes are
TensorFlow Addons 0.23's (`tfa.seq2seq.monotonic_attention`), with the same numbers:

- `"recursive"`: the recursion above, exactly. Unrolled it is `q = L α_{t−1}` with
  `L_{ij} = Π_{k=j}^{i−1} (1 − p_k)` (`i ≥ j`), made here with one `cumprod` over a `[B, S, S]`
  tensor (products only: no logarithm, no division), so it costs O(S²) per step where tfa's
  `tf.scan` runs S sequential steps; both are exact.
- `"parallel"`: the closed form `α = p · cp · cumsum(α_{t−1} / clip(cp, 1e−10, 1))` with
  `cp = safe_cumprod(1 − p)` exclusive. O(S); inexact where `cp` underflows.
- `"hard"`: for 0/1 probabilities (`p = [e > 0]`): `p ← p · cumsum(α_{t−1})`, then
  `α = p · cumprod(1 − p)` exclusive, a one-hot at the first chosen position at or after the
  previous one.

Everything runs in float32 (float64 for float64 inputs).
"""

from __future__ import annotations

import numpy as np
from keras import ops

from keras_attention.functional.softmax import wide_float_dtype

__all__ = [
    "MONOTONIC_MODES",
    "location_features",
    "monotonic_alignment",
    "monotonic_probabilities",
    "safe_cumprod",
]

MONOTONIC_MODES = ("parallel", "recursive", "hard")


def _exclusive(x, fill: float):
    """`x` shifted one step right along the last axis, `fill` at position 0."""
    first = ops.full(ops.shape(x[..., :1]), fill, x.dtype)
    return ops.concatenate([first, x[..., :-1]], axis=-1)


def safe_cumprod(x, exclusive: bool = False):
    """Cumulative product over the last axis, computed as `exp(cumsum(log(clip(x, tiny, 1))))`.

    tfa's `safe_cumprod`: a product of many factors in (0, 1] underflows, and the gradient of
    `cumprod` divides by its factors (NaN at 0); in log space neither happens. Factors are clipped
    into `[tiny, 1]` (tiny: the smallest normal number of the dtype).

    Args:
        x: `[..., S]`, values in [0, 1].
        exclusive: Product of the factors strictly before each position (1 at position 0).
            Defaults to `False`.

    Returns:
        `[..., S]` in float32 (float64 for float64 inputs).

    Example:

    >>> import numpy as np
    >>> np.asarray(safe_cumprod(np.array([0.5, 0.5, 0.5]), exclusive=True)).tolist()
    [1.0, 0.5, 0.25]
    """
    x = ops.convert_to_tensor(x)
    dtype = wide_float_dtype(x.dtype)
    x = ops.cast(x, dtype)
    logs = ops.log(ops.clip(x, float(np.finfo(dtype).tiny), 1.0))
    if exclusive:
        logs = _exclusive(logs, 0.0)
    return ops.exp(ops.cumsum(logs, axis=-1))


def monotonic_alignment(p_choose, previous, mode: str = "parallel"):
    """The monotonic alignment `α_t` from choosing probabilities and `α_{t−1}` (module docstring).

    Args:
        p_choose: `[B, S]` probabilities in [0, 1] (0 or 1 for `"hard"`).
        previous: `[B, S]`, the previous alignment (a one-hot on position 0 at the first step).
        mode: `"parallel"`, `"recursive"` or `"hard"`. Defaults to `"parallel"`.

    Returns:
        `[B, S]` in float32 (float64 for float64 inputs).

    Example:

    >>> import numpy as np
    >>> p = np.array([[0.5, 0.5, 1.0]]); start = np.array([[1.0, 0.0, 0.0]])
    >>> np.asarray(monotonic_alignment(p, start, "recursive")).tolist()
    [[0.5, 0.25, 0.25]]
    """
    if mode not in MONOTONIC_MODES:
        raise ValueError(
            f"`mode` must be one of {', '.join(map(repr, MONOTONIC_MODES))}. "
            f"Received: mode={mode!r}"
        )
    p_choose, previous = ops.convert_to_tensor(p_choose), ops.convert_to_tensor(previous)
    dtype = wide_float_dtype(p_choose.dtype)
    p, previous = ops.cast(p_choose, dtype), ops.cast(previous, dtype)
    if mode == "parallel":
        cumprod = safe_cumprod(1.0 - p, exclusive=True)
        return p * cumprod * ops.cumsum(previous / ops.clip(cumprod, 1e-10, 1.0), axis=-1)
    if mode == "hard":
        p = p * ops.cumsum(previous, axis=-1)
        return p * ops.cumprod(_exclusive(1.0 - p, 1.0), axis=-1)
    # recursive: q_i = Σ_{j ≤ i} α_{t−1,j} Π_{k=j}^{i−1} (1 − p_k). factors[b, i, j] is
    # (1 − p_{i−1}) below the diagonal and 1 on and above it; its cumprod over i is
    # Π_{k=j}^{i−1} (1 − p_k) below and on the diagonal, masked to 0 above it.
    length = ops.shape(p)[-1]
    rows = ops.expand_dims(ops.arange(length), -1)
    below = ops.expand_dims(rows > ops.arange(length), 0)  # [1, S, S]: i > j
    shifted = ops.expand_dims(_exclusive(1.0 - p, 1.0), -1)  # [B, S, 1]: 1 − p_{i−1}
    factors = ops.where(below, shifted, ops.ones_like(shifted))
    lower = ops.logical_not(ops.expand_dims(rows < ops.arange(length), 0))  # i >= j
    products = ops.where(lower, ops.cumprod(factors, axis=1), ops.zeros_like(factors))
    q = ops.einsum("bij,bj->bi", products, previous)
    return p * q


def monotonic_probabilities(scores, previous, mode: str = "parallel", noise=None, mask=None):
    """Monotonic attention weights from scores: tfa's `_monotonic_probability_fn`.

    `p = sigmoid(e + noise)` (`p = [e + noise > 0]` in `"hard"` mode), `p = 0` on padding, then
    `monotonic_alignment(p, previous, mode)`.

    Args:
        scores: `[B, S]` energies (the score bias already added).
        previous: `[B, S]`, the previous alignment.
        mode: `"parallel"`, `"recursive"` or `"hard"`. Defaults to `"parallel"`.
        noise: Optional `[B, S]` pre-sigmoid noise (already scaled). Defaults to `None`.
        mask: Optional boolean `[B, S]`, false on padding (never chosen: zero weight).
            Defaults to `None`.

    Returns:
        `[B, S]` in float32 (float64 for float64 scores).
    """
    scores = ops.convert_to_tensor(scores)
    dtype = wide_float_dtype(scores.dtype)
    scores = ops.cast(scores, dtype)
    if noise is not None:
        scores = scores + ops.cast(noise, dtype)
    if mode == "hard":
        p = ops.cast(scores > 0, dtype)
    else:
        p = ops.sigmoid(scores)
    if mask is not None:  # tfa sets padded scores to the dtype's lowest value: sigmoid → 0
        p = ops.where(ops.cast(mask, "bool"), p, ops.zeros_like(p))
    return monotonic_alignment(p, previous, mode)


def location_features(alignments, kernel):
    """Convolutional features of previous alignments: `f = F * α` (Chorowski et al., 2015).

    A 1-D convolution over the memory axis with "same" padding (zeros beyond both ends), no
    bias: `f[b, i, k] = Σ_j Σ_c α[b, i + j − ⌊(K − 1) / 2⌋, c] F[j, c, k]`.

    Args:
        alignments: `[B, S, C]` (C = 1: the previous alignment; C = 2: it and the cumulative
            alignment).
        kernel: `[K, C, F]` filters.

    Returns:
        `[B, S, F]` in the dtype of `kernel`.

    Example:

    >>> import numpy as np
    >>> a = np.array([[[0.0], [1.0], [0.0]]], "float32"); k = np.ones((3, 1, 1), "float32")
    >>> np.asarray(location_features(a, k))[0, :, 0].tolist()
    [1.0, 1.0, 1.0]
    """
    kernel = ops.convert_to_tensor(kernel)
    alignments = ops.cast(alignments, kernel.dtype)
    return ops.conv(alignments, kernel, strides=1, padding="same", data_format="channels_last")

"""Drawing tokens from logits: temperature, top-k and nucleus filtering, a stateless generator.

Shared by `sample_search` and by scheduled sampling in `AttentionRNN`. Everything is float32
`keras.ops`; the random numbers come in as uniforms in (0, 1), one per row, so the draw itself
is deterministic given them (`draw_tokens`). `step_uniforms` makes those uniforms from a seed,
the step and the row with an integer hash: a counter-based generator, stateless (no variable to
carry through a `while_loop`, which JAX cannot update inside a compiled loop), whose seed may be
a tensor (an argument of a compiled function or of an exported signature), and which gives the
same numbers on every backend, device and compiler (int32 arithmetic wraps the same way
everywhere), eager or XLA.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from keras import ops

__all__ = ["check_sampling", "draw_tokens", "step_uniforms"]

# Lowest float32 "logit" of filtered tokens (finite: no -inf - -inf = NaN downstream).
_FILTERED = -3.0e38


def check_sampling(temperature: Any, top_k: Any, top_p: Any) -> tuple:
    """`(temperature, top_k, top_p)` validated: a `ValueError` names a bad one."""
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, numbers.Real)
        or not math.isfinite(float(temperature))
        or temperature <= 0
    ):
        raise ValueError(
            f"`temperature` must be a finite number > 0. Received: temperature={temperature!r}"
        )
    if top_k is not None and (
        isinstance(top_k, bool) or not isinstance(top_k, numbers.Integral) or top_k < 1
    ):
        raise ValueError(f"`top_k` must be None or an integer >= 1. Received: top_k={top_k!r}")
    if top_p is not None and (
        isinstance(top_p, bool) or not isinstance(top_p, numbers.Real) or not 0 < float(top_p) <= 1
    ):
        raise ValueError(f"`top_p` must be None or a number in (0, 1]. Received: top_p={top_p!r}")
    return (
        float(temperature),
        None if top_k is None else int(top_k),
        None if top_p is None else float(top_p),
    )


def draw_tokens(
    log_probs: Any,
    uniforms: Any,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
) -> Any:
    """One token per row from `softmax(log_probs / T)`, filtered, by inverse-CDF sampling.

    Filters apply in the KerasHub order: temperature first, then the `top_k` most probable
    tokens, then the nucleus of that renormalised remainder (the smallest prefix, by
    decreasing probability, whose mass reaches `top_p`; the most probable token is always
    kept). The draw is token `j` with `C_{j-1} < u C_V <= C_j`, `C` the cumulative sum of the
    kept (unnormalised) probabilities in float32: a token whose probability is zero (filtered)
    is never drawn, because its cumulative sum equals its predecessor's.

    Args:
        log_probs: `[N, V]` logits or log-probabilities (any float dtype; computed in float32).
        uniforms: `[N]` numbers in (0, 1), one per row (e.g. `step_uniforms`).
        temperature: T > 0. Defaults to `1.0`.
        top_k: Keep the k most probable tokens (ties broken by `ops.top_k`). Defaults to
            `None` (all).
        top_p: Keep the nucleus of mass `top_p`. Defaults to `None` (all; `1.0` is the same).

    Returns:
        int32 `[N]` token ids.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> log_probs = np.log(np.array([[0.5, 0.3, 0.2]] * 3, "float32"))
    >>> uniforms = np.array([0.1, 0.6, 0.9], "float32")
    >>> ops.convert_to_numpy(draw_tokens(log_probs, uniforms)).tolist()
    [0, 1, 2]
    >>> ops.convert_to_numpy(draw_tokens(log_probs, uniforms, top_k=2)).tolist()
    [0, 0, 1]
    """
    z = ops.cast(log_probs, "float32")
    if temperature != 1.0:
        z = z / temperature
    vocab = z.shape[-1]
    if top_p is not None and top_p >= 1.0:
        top_p = None
    indices = None
    if top_k is not None or top_p is not None:
        k = vocab if top_k is None else top_k
        if vocab is not None:
            k = min(k, int(vocab))
        z, indices = ops.top_k(z, k)  # sorted, most probable first
        weights = ops.exp(z - z[:, :1])
    else:
        weights = ops.exp(z - ops.max(z, axis=-1, keepdims=True))
    if top_p is not None:
        cumulative = ops.cumsum(weights, axis=-1)
        before = cumulative - weights  # the mass of the more probable tokens
        keep = before < top_p * cumulative[:, -1:]
        weights = ops.where(keep, weights, ops.zeros_like(weights))
    cumulative = ops.cumsum(weights, axis=-1)
    threshold = ops.expand_dims(ops.cast(uniforms, "float32"), -1) * cumulative[:, -1:]
    # u < 1 so u * C_V <= C_V: the count is at most V - 1; u > 0 skips zero-probability tokens.
    chosen = ops.sum(ops.cast(cumulative < threshold, "int32"), axis=-1)
    if indices is None:
        return chosen
    chosen = ops.expand_dims(chosen, -1)
    return ops.cast(ops.take_along_axis(indices, chosen, axis=-1)[:, 0], "int32")


# ---------------------------------------------------------------- a stateless generator
def _int32(value: int) -> int:
    """A 32-bit pattern as the int32 holding the same bits."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


_M1, _M2, _GOLDEN = _int32(0x7FEB352D), _int32(0x846CA68B), _int32(0x9E3779B9)


def _shift_right(x, bits: int):
    """Logical right shift of int32 bit patterns (`>>` is arithmetic on negatives)."""
    return ops.bitwise_and(ops.right_shift(x, bits), (1 << (32 - bits)) - 1)


def _mix(x):
    """The `lowbias32` integer hash (C. Wellons), in int32 arithmetic that wraps."""
    x = ops.bitwise_xor(x, _shift_right(x, 16))
    x = ops.multiply(x, ops.convert_to_tensor(_M1, "int32"))
    x = ops.bitwise_xor(x, _shift_right(x, 15))
    x = ops.multiply(x, ops.convert_to_tensor(_M2, "int32"))
    return ops.bitwise_xor(x, _shift_right(x, 16))


def seed_tensor(seed: Any):
    """A seed (Python int or integer tensor) as an int32 scalar tensor (Python ints are reduced
    to 32 bits)."""
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        return ops.convert_to_tensor(_int32(int(seed)), "int32")
    return ops.reshape(ops.cast(seed, "int32"), ())


def step_uniforms(seed: Any, t: Any, rows: int | Any):
    """`[rows]` float32 uniforms in (0, 1) for step `t`, a function of `(seed, t, row)` only.

    `u = ((hash(hash(hash(seed) + t * φ) + row) >> 9) + 0.5) / 2**23`, with `hash` the
    `lowbias32` integer hash and φ = 0x9E3779B9 (all mod 2**32): 23 random bits per number,
    exact in float32, so `0 < u < 1` always.

    Args:
        seed: A Python int or an int32 scalar tensor.
        t: The step index (int or int32 scalar tensor).
        rows: How many numbers (int or scalar tensor).

    Returns:
        float32 `[rows]`.
    """
    key = _mix(seed_tensor(seed))
    step = _mix(key + ops.multiply(ops.cast(t, "int32"), ops.convert_to_tensor(_GOLDEN, "int32")))
    bits = _mix(step + ops.arange(rows, dtype="int32"))
    return (ops.cast(_shift_right(bits, 9), "float32") + 0.5) * (1.0 / (1 << 23))

"""Local attention windows (Luong et al., 2015, §3.2) with a static window of 2D+1 positions.

Everything here is O(T·(2D+1)) per row: windows are gathered, never cut out of a full `[T, S]`
score matrix. Rounding is half-up: `round(p) = floor(p + 0.5)`.
"""

from __future__ import annotations

from keras import ops

from keras_attention.functional._checks import check_min_rank, check_radius
from keras_attention.functional.softmax import wide_float_dtype

__all__ = [
    "valid_lengths",
    "gather_positions",
    "window_positions",
    "window_validity",
    "gaussian_window",
    "expand_window_weights",
    "last_valid_positions",
]


def valid_lengths(mask):
    """Number of valid memory positions per row, int32 `[B]`, from a boolean mask `[B, S]`."""
    return ops.sum(ops.cast(mask, "int32"), axis=-1)


def gather_positions(memory, positions):
    """Gather `memory[b, positions[b, ...]]`, positions clipped into `[0, S)`.

    Args:
        memory: `[B, S, ...]`.
        positions: Integer `[B, ...]`.

    Returns:
        `[B, *positions.shape[1:], *memory.shape[2:]]`.

    Example:

    >>> import numpy as np
    >>> m = np.arange(6.0).reshape(1, 3, 2)
    >>> np.asarray(gather_positions(m, np.array([[[2, 0, 5]]]))).tolist()
    [[[[4.0, 5.0], [0.0, 1.0], [4.0, 5.0]]]]
    """
    check_min_rank("memory", memory, 2)
    shape = ops.shape(memory)
    batch, length = shape[0], shape[1]
    rest = tuple(memory.shape[2:])
    positions = ops.clip(ops.cast(positions, "int32"), 0, length - 1)
    offsets = ops.arange(batch, dtype="int32") * ops.cast(length, "int32")
    offsets = ops.reshape(offsets, (-1,) + (1,) * (len(positions.shape) - 1))
    flat = ops.reshape(memory, (-1,) + rest)
    return ops.take(flat, positions + offsets, axis=0)


def window_positions(center, radius: int):
    """Integer positions `center - D ... center + D`, `[B, T] -> [B, T, 2D+1]`."""
    check_radius(radius, 0)
    offsets = ops.arange(-radius, radius + 1, dtype="int32")
    return ops.expand_dims(ops.cast(center, "int32"), -1) + offsets


def window_validity(positions, length, mask=None, query_positions=None):
    """Which window positions are real memory: `0 <= i < S`, `mask[b, i]`, and (causal) `i <= t`.

    Args:
        positions: Integer `[B, T, W]`.
        length: Padded memory length `S`.
        mask: Optional boolean `[B, S]`. Defaults to `None`.
        query_positions: Optional integer `[B, T]`; when given, positions after the query's
            own step are invalid (causal attention). Defaults to `None`.

    Returns:
        Boolean `[B, T, W]`.
    """
    positions = ops.cast(positions, "int32")
    valid = ops.logical_and(positions >= 0, positions < length)
    if mask is not None:
        valid = ops.logical_and(valid, gather_positions(ops.cast(mask, "bool"), positions))
    if query_positions is not None:
        valid = ops.logical_and(
            valid, positions <= ops.expand_dims(ops.cast(query_positions, "int32"), -1)
        )
    return valid


def gaussian_window(positions, center, radius: int):
    """`exp(-(i - p_t)^2 / (2 sigma^2))` with `sigma = D / 2`, `[B, T, W]`, float32 or float64.

    Gradients flow to the (real-valued) predicted position `center` `[B, T]`.
    """
    check_radius(radius, 1)  # sigma = 0 would divide by zero
    sigma = radius / 2.0
    center = ops.convert_to_tensor(center)
    dtype = wide_float_dtype(center.dtype)
    distance = ops.cast(positions, dtype) - ops.expand_dims(ops.cast(center, dtype), -1)
    return ops.exp(-ops.square(distance) / (2.0 * sigma * sigma))


def expand_window_weights(weights, start, length):
    """Lay window weights `[B, T, W]` (window starting at `start` `[B, T]`) out over `[B, T, S]`.

    Position `s` takes window slot `s - start` when that slot exists, else 0. Costs O(T·S): only
    used when the caller asks for the full alignment matrix.
    """
    width = weights.shape[-1]
    start = ops.cast(start, "int32")
    slots = ops.arange(length, dtype="int32") - ops.expand_dims(start, -1)
    inside = ops.logical_and(slots >= 0, slots < width)
    # A flat `take` rather than `take_along_axis`: TensorFlow's broadcasts the indices, and the
    # gradient of that broadcast inside a while loop is rejected by XLA for dynamic batches.
    rows = ops.reshape(ops.arange(ops.size(start), dtype="int32") * width, ops.shape(start))
    index = ops.expand_dims(rows, -1) + ops.clip(slots, 0, width - 1)
    gathered = ops.take(ops.reshape(weights, (-1,)), index)
    return ops.where(inside, gathered, 0.0)


def last_valid_positions(mask):
    """Index of the last valid step of each row, int32 `[B]` (0 for a row with none).

    Args:
        mask: Boolean `[B, S]`.
    """
    steps = ops.arange(ops.shape(mask)[-1], dtype="int32")
    last = ops.max(ops.where(ops.cast(mask, "bool"), steps, -ops.ones_like(steps)), axis=-1)
    return ops.maximum(last, 0)

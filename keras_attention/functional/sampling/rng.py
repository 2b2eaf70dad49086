"""A stateless random generator: uniforms in (0, 1) from an integer hash of (seed, step, row,
token).

A counter-based generator: each number is a function of its coordinates only, so there is no
variable to carry through a `while_loop` (JAX cannot update one inside a compiled loop), the
seed may be a tensor (an argument of a compiled function or of an exported signature), and the
numbers are the same on every backend, device and compiler, eager or XLA (int32 arithmetic
wraps the same way everywhere). The hash is `lowbias32` (C. Wellons); `tests/decoding/
test_sampling.py` checks it against a NumPy uint32 transcription.
"""

from __future__ import annotations

import numbers
from typing import Any

from keras import ops

__all__ = ["seed_tensor", "step_uniforms", "token_uniforms"]


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
    return _uniforms(_row_keys(seed, t, rows))


def token_uniforms(seed: Any, t: Any, rows: int | Any, vocab: int | Any):
    """`[rows, vocab]` float32 uniforms in (0, 1) for step `t`: element `(r, j)` is
    `((hash(row_key_r + j) >> 9) + 0.5) / 2**23` with `row_key_r = hash(step_key + r)` and
    `step_key = hash(hash(seed) + t * φ)` (the keys of `step_uniforms`), so each row's
    numbers are independent of the others' and of the vocabulary size.

    Args:
        seed: A Python int or an int32 scalar tensor.
        t: The step index (int or int32 scalar tensor).
        rows: N (int or scalar tensor).
        vocab: V (int or scalar tensor).

    Returns:
        float32 `[rows, vocab]`.
    """
    tokens = ops.expand_dims(ops.arange(vocab, dtype="int32"), 0)
    return _uniforms(_mix(ops.expand_dims(_row_keys(seed, t, rows), -1) + tokens))


def _row_keys(seed, t, rows):
    """int32 `[rows]`: `hash(hash(hash(seed) + t * φ) + row)`, the per-row keys of step `t`."""
    key = _mix(seed_tensor(seed))
    step = _mix(key + ops.multiply(ops.cast(t, "int32"), ops.convert_to_tensor(_GOLDEN, "int32")))
    return _mix(step + ops.arange(rows, dtype="int32"))


def _uniforms(bits):
    """Hashed int32 bits as float32 uniforms `((bits >> 9) + 0.5) / 2**23`, in (0, 1)."""
    return (ops.cast(_shift_right(bits, 9), "float32") + 0.5) * (1.0 / (1 << 23))

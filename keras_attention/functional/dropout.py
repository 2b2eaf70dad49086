"""Dropout whose mask comes from the package's counter-based hash, not the backend's generator.

Why: under XLA on CPU, TensorFlow's random generator is far slower than outside it, and
`examples/pronounce.py` trains with XLA: its dropout calls took most of the training's CPU
time (see BENCHMARKS.md §7). The hash of `functional/sampling/rng.py` is a few
int32 multiplies, shifts and xors per number, fast compiled or not, the same numbers on every
backend. The math is Keras' `Dropout`'s: each element is kept with probability `1 - rate` and
scaled by `1 / (1 - rate)`; only the random stream differs.
"""

from __future__ import annotations

from typing import Any

from keras import ops

from keras_attention._validation import check_rate
from keras_attention.functional.sampling.rng import _mix, _uniforms, seed_tensor

__all__ = ["hashed_dropout", "hashed_uniforms"]

_GOLDEN = -1640531527  # 0x9E3779B9 as int32


def hashed_uniforms(seed: Any, counter: Any, shape):
    """float32 uniforms in (0, 1) of `shape`: element `i` (row-major) is
    `((hash(hash(hash(seed) + counter * φ) + i) >> 9) + 0.5) / 2**23`, `hash` the
    `lowbias32` integer hash of `functional/sampling/rng.py` and φ = 0x9E3779B9, all mod 2**32.

    Args:
        seed: A Python int or an int32 scalar tensor.
        counter: A Python int or an int32 scalar tensor (a `SeedGenerator`'s call counter).
        shape: The shape (a tuple of ints or a shape tensor).

    Returns:
        float32 of `shape`.
    """
    key = _mix(seed_tensor(seed))
    step = ops.multiply(ops.cast(counter, "int32"), ops.convert_to_tensor(_GOLDEN, "int32"))
    key = _mix(key + step)
    count = 1
    for size in shape:
        count = count * size
    return ops.reshape(_uniforms(_mix(key + ops.arange(count, dtype="int32"))), shape)


def hashed_dropout(inputs, rate: float, seed_generator):
    """`inputs` with each element zeroed with probability `rate` and the others scaled by
    `1 / (1 - rate)` (Keras' `Dropout` in training), the mask drawn by `hashed_uniforms` from
    the next state of `seed_generator`. The models' `HashedDropout` layer calls it.

    Args:
        inputs: A float tensor.
        rate: The probability of dropping an element, in [0, 1); 0 returns `inputs`.
        seed_generator: A `keras.random.SeedGenerator`, advanced once per call.

    Returns:
        A tensor of the shape and dtype of `inputs`.
    """
    rate = check_rate("rate", rate)
    if not rate:
        return inputs
    state = ops.cast(seed_generator.next(), "int32")
    keep = ops.greater_equal(hashed_uniforms(state[0], state[1], ops.shape(inputs)), rate)
    return inputs * ops.cast(keep, inputs.dtype) * ops.cast(1.0 / (1.0 - rate), inputs.dtype)

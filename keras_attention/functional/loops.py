"""A time loop over `[T, B, ...]` inputs that collects per-step outputs, trainable under XLA.

`step_fn(t, x_t, carry) -> (carry, outputs)` runs for `t < steps` in an `ops.while_loop` with
`maximum_iterations`. On the TensorFlow backend reads and writes go through `tf.TensorArray`
(O(1) per step forward and backward, as Keras' own RNN loop does); elsewhere through
`ops.take`/`ops.scatter_update` on `[T, B, ...]` buffers. Neither leaves
`XlaDynamicUpdateSlice` in exported graphs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import keras
from keras import ops

__all__ = ["time_loop"]


def time_loop(
    step_fn: Callable,
    inputs,
    carry,
    output_shapes: Sequence[tuple],
    dtype: str,
):
    """Run `step_fn` over the leading (time) axis of `inputs`.

    Args:
        step_fn: `(t, x_t, carry) -> (carry, outputs)`, `outputs` a list of tensors with the
            shapes of `output_shapes` (without the time axis).
        inputs: `[T, B, ...]`.
        carry: Loop state (a nested structure of tensors with fixed shapes).
        output_shapes: Shapes `(B, ...)` of the per-step outputs (dims may be tensors).
        dtype: dtype of the outputs.

    Returns:
        `(carry, [outputs stacked over time, [T, B, ...] each])`.
    """
    steps = ops.shape(inputs)[0]
    if keras.backend.backend() == "tensorflow":
        return _tensorflow_loop(step_fn, inputs, carry, len(output_shapes), dtype, steps)
    return _keras_loop(step_fn, inputs, carry, output_shapes, dtype, steps)


def _keras_loop(step_fn, inputs, carry, output_shapes, dtype, steps):
    buffers = [ops.zeros((steps,) + tuple(shape), dtype) for shape in output_shapes]

    def body(t, carry, buffers):
        carry, outputs = step_fn(t, ops.take(inputs, t, axis=0), carry)
        index = ops.reshape(t, (1, 1))
        buffers = [
            ops.scatter_update(b, index, ops.expand_dims(ops.cast(o, dtype), 0))
            for b, o in zip(buffers, outputs)
        ]
        return t + 1, carry, buffers

    _, carry, buffers = ops.while_loop(
        lambda t, *_: t < steps,
        body,
        (ops.convert_to_tensor(0, "int32"), carry, buffers),
        maximum_iterations=steps,
    )
    return carry, list(buffers)


def _tensorflow_loop(step_fn, inputs, carry, n_outputs, dtype, steps):
    import tensorflow as tf

    reads = tf.TensorArray(inputs.dtype, size=steps, clear_after_read=False).unstack(inputs)
    writes = [tf.TensorArray(dtype, size=steps) for _ in range(n_outputs)]

    def body(t, carry, writes):
        carry, outputs = step_fn(t, reads.read(t), carry)
        writes = [w.write(t, tf.cast(o, dtype)) for w, o in zip(writes, outputs)]
        return t + 1, carry, writes

    _, carry, writes = tf.while_loop(
        lambda t, *_: t < steps,
        body,
        (tf.constant(0, tf.int32), carry, writes),
        maximum_iterations=steps,
    )
    return carry, [w.stack() for w in writes]

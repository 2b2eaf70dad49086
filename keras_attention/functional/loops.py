"""A time loop over `[T, B, ...]` inputs that collects per-step outputs, trainable under XLA.

`step_fn(t, x_t, carry) -> (carry, outputs)` runs once per time step and every path is O(T) in
time and memory, forward and backward:

- TensorFlow: an `ops.while_loop`-style `tf.while_loop` with `maximum_iterations` whose reads
  and writes go through `tf.TensorArray` (as Keras' own RNN loop does). `ops.scan` fails there
  inside `fit(jit_compile=True)` ("XLA compilation requires a fixed tensor list size") and
  per-step `ops.slice_update` leaves `XlaDynamicUpdateSlice` in exported graphs.
- JAX and PyTorch: `ops.scan` (`jax.lax.scan`, reverse-mode differentiable, where
  `lax.while_loop` is not; a Python loop + `torch.stack` on PyTorch). The number of steps is
  always static on these backends, even under `jax.jit`.

`_keras_loop` (an `ops.while_loop` writing `[T, B, ...]` buffers with `ops.scatter_update`) is
kept as a forward-only fallback for any other backend; it is not differentiable on JAX and
copies the buffer every step on PyTorch.
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
    reverse: bool = False,
):
    """Run `step_fn` over the leading (time) axis of `inputs`.

    Args:
        step_fn: `(t, x_t, carry) -> (carry, outputs)`, `t` an int32 scalar tensor, `outputs`
            a list of tensors with the shapes of `output_shapes` (without the time axis).
        inputs: `[T, B, ...]`, or a tuple of such tensors with the same `T` (then `x_t` is the
            tuple of their steps `t`).
        carry: Loop state (a nested structure of tensors with fixed shapes).
        output_shapes: Shapes `(B, ...)` of the per-step outputs (dims may be tensors).
        dtype: dtype of the outputs.
        reverse: Run from the last step to the first (a backward pass). `t` is still the
            step's position and the outputs are stacked in time order.

    Returns:
        `(carry, [outputs stacked over time, [T, B, ...] each])`.
    """
    if not callable(step_fn):
        raise TypeError(f"`step_fn` must be callable. Received: step_fn={step_fn!r}")
    several = isinstance(inputs, (tuple, list))
    sequences = tuple(inputs) if several else (inputs,)
    if not sequences:
        raise ValueError(f"`inputs` must hold at least one tensor. Received: inputs={inputs!r}")

    step = step_fn if several else _one_input(step_fn)
    steps = ops.shape(sequences[0])[0]
    if sequences[0].shape[0] == 0:  # no steps (static): the carry, and outputs with no time steps
        return carry, [ops.zeros((0,) + tuple(shape), dtype) for shape in output_shapes]
    backend = keras.backend.backend()
    if backend == "tensorflow":
        return _tensorflow_loop(step, sequences, carry, len(output_shapes), dtype, steps, reverse)
    if backend in ("jax", "torch"):
        return _scan_loop(step, sequences, carry, output_shapes, dtype, steps, reverse)
    return _keras_loop(step, sequences, carry, output_shapes, dtype, steps, reverse)


def _one_input(step_fn):
    """`step_fn(t, x_t, carry)` called with the 1-tuple of steps the loops below pass."""

    def step(t, xs, carry):
        return step_fn(t, xs[0], carry)

    return step


def _scan_loop(step_fn, sequences, carry, output_shapes, dtype, steps, reverse):
    """`ops.scan` over `(t, x_t)`; needs a static number of steps (JAX, PyTorch)."""
    if steps == 0:  # nothing to run; ops.scan cannot stack zero steps on PyTorch
        return carry, [ops.zeros((0,) + tuple(shape), dtype) for shape in output_shapes]

    def body(carry, xs):
        carry, outputs = step_fn(xs[0], xs[1:], carry)
        return carry, [ops.cast(o, dtype) for o in outputs]

    xs = (ops.arange(steps, dtype="int32"), *sequences)
    carry, stacked = ops.scan(body, carry, xs, reverse=reverse)
    return carry, list(stacked)


def _keras_loop(step_fn, sequences, carry, output_shapes, dtype, steps, reverse):
    """`ops.while_loop` writing `[T, B, ...]` buffers with `ops.scatter_update` (forward)."""
    buffers = [ops.zeros((steps,) + tuple(shape), dtype) for shape in output_shapes]

    def body(i, carry, buffers):
        t = steps - 1 - i if reverse else i
        xs = tuple(ops.take(x, t, axis=0) for x in sequences)
        carry, outputs = step_fn(t, xs, carry)
        index = ops.reshape(t, (1, 1))
        buffers = [
            ops.scatter_update(b, index, ops.expand_dims(ops.cast(o, dtype), 0))
            for b, o in zip(buffers, outputs)
        ]
        return i + 1, carry, buffers

    _, carry, buffers = ops.while_loop(
        lambda i, *_: i < steps,
        body,
        (ops.convert_to_tensor(0, "int32"), carry, buffers),
        maximum_iterations=steps,
    )
    return carry, list(buffers)


def _tensorflow_loop(step_fn, sequences, carry, n_outputs, dtype, steps, reverse):
    """`tf.while_loop` over `tf.TensorArray` reads and writes (TensorFlow only)."""
    import tensorflow as tf

    reads = [
        tf.TensorArray(x.dtype, size=steps, clear_after_read=False).unstack(x) for x in sequences
    ]
    writes = [tf.TensorArray(dtype, size=steps) for _ in range(n_outputs)]

    def body(i, carry, writes):
        t = steps - 1 - i if reverse else i
        carry, outputs = step_fn(t, tuple(r.read(t) for r in reads), carry)
        writes = [w.write(t, tf.cast(o, dtype)) for w, o in zip(writes, outputs)]
        return i + 1, carry, writes

    _, carry, writes = tf.while_loop(
        lambda i, *_: i < steps,
        body,
        (tf.constant(0, tf.int32), carry, writes),
        maximum_iterations=steps,
    )
    return carry, [w.stack() for w in writes]

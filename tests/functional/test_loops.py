"""functional.time_loop on the current backend, eager and compiled, values and gradients.

`time_loop` dispatches by backend (tf.TensorArray on TensorFlow, `ops.scan` on JAX and
PyTorch); `_keras_loop` is the forward-only `ops.while_loop` fallback, checked on every backend.
"""

from __future__ import annotations

import numpy as np
import pytest
from keras import ops

from keras_attention.functional import loops
from tests.backend_utils import BACKEND, jit, to_numpy

STEPS, BATCH, DIM = 5, 3, 2
WEIGHTS = np.arange(1.0, STEPS + 1.0, dtype="float32")[:, None, None]  # w_t = t + 1


def _running_sum(t, x_t, carry):
    total = carry + x_t
    return total, [total, x_t * 2.0 + ops.cast(t, "float32")]


def _loop(x, path="time_loop"):
    shapes = [(BATCH, DIM), (BATCH, DIM)]
    zeros = ops.zeros((BATCH, DIM))
    if path == "time_loop":
        return loops.time_loop(_running_sum, x, zeros, shapes, "float32")
    step = loops._one_input(_running_sum)
    return loops._keras_loop(step, (x,), zeros, shapes, "float32", ops.shape(x)[0], False)


def _loss(x):
    carry, (sums, _) = _loop(x)
    return ops.sum(ops.multiply(sums, WEIGHTS)) + ops.sum(carry)


def _value_and_grad_of_input(x, compiled):
    """`_loss(x)` and `d loss / dx` for an input tensor (compiled with XLA when asked)."""
    if BACKEND == "tensorflow":
        import tensorflow as tf

        def fn(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                loss = _loss(x)
            return loss, tape.gradient(loss, x)

        fn = tf.function(fn, jit_compile=True) if compiled else fn
        return fn(tf.constant(x))
    if BACKEND == "jax":
        import jax

        fn = jax.value_and_grad(_loss)
        return (jax.jit(fn) if compiled else fn)(x)
    import torch

    def fn(x):
        x = x.clone().requires_grad_(True)
        loss = _loss(x)
        return loss, torch.autograd.grad(loss, x)[0]

    return (jit(fn) if compiled else fn)(torch.tensor(x))


def _expected(x):
    sums = np.cumsum(x, axis=0)
    doubled = 2 * x + np.arange(STEPS, dtype="float32")[:, None, None]
    return x.sum(0), sums, doubled


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "jit"])
def test_time_loop_collects_outputs(compiled):
    x = np.random.default_rng(0).normal(size=(STEPS, BATCH, DIM)).astype("float32")
    fn = jit(_loop) if compiled else _loop
    carry, (sums, doubled) = to_numpy(fn(ops.convert_to_tensor(x)))
    want_carry, want_sums, want_doubled = _expected(x)
    np.testing.assert_allclose(sums, want_sums, rtol=1e-6)
    np.testing.assert_allclose(doubled, want_doubled, rtol=1e-6)
    np.testing.assert_allclose(carry, want_carry, rtol=1e-6)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "jit"])
def test_time_loop_gradients(compiled):
    """Reverse mode through the loop (`lax.while_loop` has none on JAX: the loop must not
    use it), eager and under XLA / torch.compile."""
    x = np.random.default_rng(1).normal(size=(STEPS, BATCH, DIM)).astype("float32")
    loss, grad = (to_numpy(v) for v in _value_and_grad_of_input(x, compiled))
    _, want_sums, _ = _expected(x)
    np.testing.assert_allclose(loss, (want_sums * WEIGHTS).sum() + x.sum(), rtol=1e-5)
    # d/dx_t of sum_s w_s cumsum_s + sum_t x_t = sum_{s >= t} w_s + 1, w = 1..5.
    expected = np.array([16.0, 15.0, 13.0, 10.0, 6.0])[:, None, None] * np.ones_like(x)
    np.testing.assert_allclose(grad, expected, rtol=1e-6)


def test_keras_while_loop_fallback_collects_outputs():
    x = np.random.default_rng(2).normal(size=(STEPS, BATCH, DIM)).astype("float32")
    carry, (sums, doubled) = to_numpy(_loop(ops.convert_to_tensor(x), path="_keras_loop"))
    want_carry, want_sums, want_doubled = _expected(x)
    np.testing.assert_allclose(sums, want_sums, rtol=1e-6)
    np.testing.assert_allclose(doubled, want_doubled, rtol=1e-6)
    np.testing.assert_allclose(carry, want_carry, rtol=1e-6)


def test_time_loop_without_outputs_returns_the_carry():
    x = np.random.default_rng(3).normal(size=(STEPS, BATCH, DIM)).astype("float32")

    def step(t, x_t, carry):
        return carry + x_t, []

    carry, stacked = loops.time_loop(
        step, ops.convert_to_tensor(x), ops.zeros((BATCH, DIM)), [], "float32"
    )
    assert list(stacked) == []
    np.testing.assert_allclose(to_numpy(carry), x.sum(0), rtol=1e-6)


def _decayed_from_the_end(t, xs, carry):
    x_t, y_t = xs
    carry = carry * y_t + x_t
    return carry, [carry, ops.ones_like(x_t) * ops.cast(t, "float32")]


@pytest.mark.parametrize("path", ["eager", "jit", "_keras_loop"])
def test_reverse_over_several_inputs_keeps_positions(path):
    """`reverse=True` over `(x, y)`: `c_t = c_{t+1} y_t + x_t` from the last step, each output
    at its own position and `t` the position (a NumPy loop is the reference)."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=(STEPS, BATCH, DIM)).astype("float32")
    y = rng.uniform(0.5, 1.5, size=(STEPS, BATCH, DIM)).astype("float32")
    c = np.full((BATCH, DIM), 0.5, "float32")
    want = np.zeros_like(x)
    for t in reversed(range(STEPS)):
        c = c * y[t] + x[t]
        want[t] = c
    shapes = [(BATCH, DIM), (BATCH, DIM)]

    def run(x, y):
        init = ops.full((BATCH, DIM), 0.5)
        if path == "_keras_loop":
            return loops._keras_loop(
                _decayed_from_the_end, (x, y), init, shapes, "float32", STEPS, True
            )
        return loops.time_loop(_decayed_from_the_end, (x, y), init, shapes, "float32", True)

    fn = jit(run) if path == "jit" else run
    carry, (states, positions) = to_numpy(fn(ops.convert_to_tensor(x), ops.convert_to_tensor(y)))
    np.testing.assert_allclose(states, want, rtol=1e-5)
    np.testing.assert_allclose(carry, want[0], rtol=1e-5)
    np.testing.assert_array_equal(positions[:, 0, 0], np.arange(STEPS))


def test_empty_inputs_are_named():
    with pytest.raises(ValueError, match="inputs"):
        loops.time_loop(_running_sum, (), ops.zeros((BATCH, DIM)), [], "float32")

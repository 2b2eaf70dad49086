"""functional.time_loop, on both of its paths (tf.TensorArray and keras.ops buffers)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from keras_attention.functional import loops


def _running_sum(t, x_t, carry):
    total = carry + x_t
    return total, [total, x_t * 2.0]


@pytest.mark.parametrize("path", ["_tensorflow_loop", "_keras_loop"])
@pytest.mark.parametrize("jit", [False, True])
def test_time_loop_collects_outputs_and_gradients(path, jit):
    x = tf.Variable(np.random.default_rng(0).normal(size=(5, 3, 2)).astype("float32"))
    run = getattr(loops, path)
    shapes = [(3, 2), (3, 2)]

    @tf.function(jit_compile=jit)
    def fn():
        with tf.GradientTape() as tape:
            steps = tf.shape(x)[0]
            if path == "_tensorflow_loop":
                carry, (sums, doubled) = run(_running_sum, x, tf.zeros((3, 2)), 2, "float32", steps)
            else:
                carry, (sums, doubled) = run(
                    _running_sum, x, tf.zeros((3, 2)), shapes, "float32", steps
                )
            loss = tf.reduce_sum(sums * tf.range(1.0, 6.0)[:, None, None])
        return carry, sums, doubled, tape.gradient(loss, x)

    carry, sums, doubled, grad = (t.numpy() for t in fn())
    np.testing.assert_allclose(sums, np.cumsum(x.numpy(), axis=0), rtol=1e-6)
    np.testing.assert_allclose(doubled, 2 * x.numpy(), rtol=1e-6)
    np.testing.assert_allclose(carry, x.numpy().sum(0), rtol=1e-6)
    # d/dx_t of sum_s w_s * cumsum_s = sum_{s >= t} w_s with w = 1..5
    expected = np.array([15.0, 14.0, 12.0, 9.0, 5.0])[:, None, None] * np.ones((5, 3, 2))
    np.testing.assert_allclose(grad, expected, rtol=1e-6)

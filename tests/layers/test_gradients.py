"""Gradients are finite and match central finite differences (float64 layers) in every mode."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from tests.conftest import LAYER_CASES, LAYER_IDS


def _loss(layer, query, value, mask, projection):
    out, weights = layer([query, value], mask=[None, mask], return_attention_scores=True)
    return tf.reduce_sum(out * projection) + tf.reduce_sum(weights * weights)


@pytest.mark.parametrize("case", LAYER_CASES, ids=LAYER_IDS)
def test_gradients_match_finite_differences(case):
    _, cls, kwargs, _ = case
    rng = np.random.default_rng(0)
    query = tf.Variable(rng.normal(size=(2, 3, 4)))
    value = tf.Variable(rng.normal(size=(2, 6, 4)))
    mask = np.array([[True] * 6, [True] * 4 + [False] * 2])
    layer = (
        cls(**kwargs, attention_units=3, dtype="float64")
        if cls.__name__ == "LuongAttention"
        else cls(**kwargs, dtype="float64")
    )
    projection = None
    out = layer([query, value], mask=[None, mask])
    projection = tf.constant(rng.normal(size=out.shape))
    variables = [query, value] + list(layer.trainable_weights)
    with tf.GradientTape() as tape:
        loss = _loss(layer, query, value, mask, projection)
    grads = tape.gradient(loss, variables)
    eps = 1e-6
    for var, grad in zip(variables, grads):
        assert grad is not None, var.name
        grad = tf.convert_to_tensor(grad).numpy()
        assert np.all(np.isfinite(grad))
        base = var.numpy()
        flat = base.reshape(-1)
        for i in rng.choice(flat.size, size=min(flat.size, 6), replace=False):
            bumped = flat.copy()
            bumped[i] += eps
            var.assign(bumped.reshape(base.shape))
            up = float(_loss(layer, query, value, mask, projection))
            bumped[i] -= 2 * eps
            var.assign(bumped.reshape(base.shape))
            down = float(_loss(layer, query, value, mask, projection))
            var.assign(base)
            numeric = (up - down) / (2 * eps)
            np.testing.assert_allclose(
                grad.reshape(-1)[i], numeric, rtol=1e-5, atol=1e-7, err_msg=f"{var.name}[{i}]"
            )

"""Gradients of every layer × mode: finite, and equal to central finite differences.

Two independent checks, on every backend through `tests.backend_utils` (`tf.GradientTape`,
`jax.value_and_grad` over a `keras.StatelessScope`, or torch autograd):

- float32 layer gradients against central differences of the float64 NumPy reference
  (`tests/reference.py`, a transcription of docs/design.md §2), with float32 tolerances;
- float64 layer gradients against central differences of the layer itself, tightly. Keras 3.15
  computes some float64 ops in float32 on JAX (its dtype promotion maps 64-bit results to
  32-bit on every backend but TensorFlow, and `ops.tanh` follows it there), so this check runs
  on TensorFlow and PyTorch only; the first check covers JAX.
"""

from __future__ import annotations

import numpy as np
import pytest
from keras import ops

from tests import reference
from tests.backend_utils import BACKEND, enable_float64, to_numpy, value_and_grad
from tests.backend_utils import variable as make_variable
from tests.conftest import LAYER_CASES, LAYER_IDS, layer_weights, randomize_weights

MASK = np.array([[True] * 6, [True] * 4 + [False] * 2])
ATTENTION_UNITS = 3  # Luong layers return h~ = tanh(W_c [s; c]) so W_c gets a gradient too


def _make_layer(cls, kwargs, dtype):
    if cls.__name__ == "LuongAttention":
        return cls(**kwargs, attention_units=ATTENTION_UNITS, dtype=dtype)
    return cls(**kwargs, dtype=dtype)


def _loss(layer, query, value, projection):
    out, weights = layer([query, value], mask=[None, MASK], return_attention_scores=True)
    return ops.sum(out * projection) + ops.sum(weights * weights)


def _central_difference(loss, array, index, eps):
    """(loss(x + eps e_i) - loss(x - eps e_i)) / (2 eps) for a NumPy array `x`, left unchanged."""
    flat = array.reshape(-1)
    saved = flat[index]
    flat[index] = saved + eps
    up = loss()
    flat[index] = saved - eps
    down = loss()
    flat[index] = saved
    return (up - down) / (2 * eps)


def _sample(rng, size, count=6):
    return rng.choice(size, size=min(size, count), replace=False)


@pytest.mark.parametrize("case", LAYER_CASES, ids=LAYER_IDS)
def test_gradients_match_finite_differences_of_the_reference(case):
    _, cls, kwargs, ref_kwargs = case
    rng = np.random.default_rng(0)
    query = make_variable(rng.normal(size=(2, 3, 4)).astype("float32"), name="query")
    value = make_variable(rng.normal(size=(2, 6, 4)).astype("float32"), name="value")
    layer = _make_layer(cls, kwargs, "float32")
    layer.build([tuple(query.shape), tuple(value.shape)])
    randomize_weights(layer, rng)
    out_shape = (2, 3, ATTENTION_UNITS if cls.__name__ == "LuongAttention" else 4)
    projection = rng.normal(size=out_shape)
    variables = [query, value] + list(layer.trainable_weights)
    _, grads = value_and_grad(
        lambda: _loss(layer, query, value, ops.convert_to_tensor(projection, "float32")),
        variables,
    )

    # The same loss on the float64 reference, over float64 copies of every input and weight.
    ref_kwargs = dict(ref_kwargs)
    if cls.__name__ == "LuongAttention":
        ref_kwargs["attention_units"] = ATTENTION_UNITS
    arrays = {"query": to_numpy(query).astype(np.float64)}
    arrays["value"] = to_numpy(value).astype(np.float64)
    weights = layer_weights(layer)

    def reference_loss():
        out, alignment = reference.attention(
            arrays["query"], arrays["value"], weights=weights, value_mask=MASK, **ref_kwargs
        )
        return float(np.sum(out * projection) + np.sum(alignment * alignment))

    for var, grad in zip(variables, grads):
        assert grad is not None, var.name
        assert grad.shape == tuple(var.shape) and np.all(np.isfinite(grad)), var.name
        array = arrays[var.name] if var.name in arrays else weights[var.name]
        for i in _sample(rng, grad.size):
            numeric = _central_difference(reference_loss, array, i, eps=1e-6)
            np.testing.assert_allclose(
                grad.reshape(-1)[i], numeric, rtol=1e-3, atol=1e-4, err_msg=f"{var.name}[{i}]"
            )


@pytest.mark.skipif(
    BACKEND == "jax",
    reason="Keras 3.15 computes ops.tanh of float64 in float32 on JAX (covered in float32 above)",
)
@pytest.mark.parametrize("case", LAYER_CASES, ids=LAYER_IDS)
def test_float64_gradients_match_finite_differences(case):
    _, cls, kwargs, _ = case
    rng = np.random.default_rng(0)
    with enable_float64():
        query = make_variable(rng.normal(size=(2, 3, 4)), name="query")
        value = make_variable(rng.normal(size=(2, 6, 4)), name="value")
        layer = _make_layer(cls, kwargs, "float64")
        out = layer([query, value], mask=[None, MASK])
        assert to_numpy(out).dtype == np.float64
        projection = ops.convert_to_tensor(rng.normal(size=tuple(out.shape)), "float64")

        def loss():
            return _loss(layer, query, value, projection)

        variables = [query, value] + list(layer.trainable_weights)
        _, grads = value_and_grad(loss, variables)
        for var, grad in zip(variables, grads):
            assert grad is not None, var.name
            assert grad.shape == tuple(var.shape) and np.all(np.isfinite(grad)), var.name
            base = to_numpy(var).copy()

            def bumped_loss(base=base, var=var):
                var.assign(base)
                return float(to_numpy(loss()))

            for i in _sample(rng, grad.size):
                numeric = _central_difference(bumped_loss, base, i, eps=1e-6)
                np.testing.assert_allclose(
                    grad.reshape(-1)[i], numeric, rtol=1e-5, atol=1e-7, err_msg=f"{var.name}[{i}]"
                )
            var.assign(base)

"""Local attention's fused window path (`functional.window_dot_scores` / `window_weighted_sum`).

Inside TensorFlow's XLA (`jit_compile=True`) a dot-type local score on the window path gathers
and reduces in one expression, so XLA never writes the `[B, T, 2D+1, d]` windows out (JAX's
XLA writes its gathers out: there the layers leave the path alone). Checked here: the functions
against a float64 NumPy transcription on every backend, eager and compiled, the layers compiled
against tests/reference.py, the path actually taken (and not taken elsewhere), and gradients
against the einsum path.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest

from keras_attention import LuongAttention
from keras_attention import functional as F
from tests import reference
from tests.backend_utils import BACKEND, jit, to_numpy, variable
from tests.conftest import count_calls, layer_weights, random_batch, randomize_weights

TOL = {"rtol": 1e-5, "atol": 1e-5}
XLA = BACKEND in ("tensorflow", "jax")
FUSES = BACKEND == "tensorflow"  # see `_local_attention._xla_fuses_gathers`


def _xla(fn):
    """`fn` compiled by XLA on TensorFlow and JAX; PyTorch runs it eagerly (torch.compile
    would take a minute here and compiles nothing with XLA)."""
    return jit(fn) if XLA else fn


def _windows64(memory, positions):
    """`memory[b, clip(positions[b, t, w])]` in float64, by loops over NumPy indices."""
    memory = np.asarray(memory, np.float64)
    clipped = np.clip(positions, 0, memory.shape[1] - 1)
    return np.stack([memory[b][clipped[b]] for b in range(memory.shape[0])])


@pytest.mark.parametrize("dim", [16, 12, 6, 5])  # 8, 4, 2 and 1 lanes
def test_window_dot_scores_and_weighted_sum_match_float64(dim):
    rng = np.random.default_rng(dim)
    query = rng.normal(size=(2, 7, dim)).astype("float32")
    memory = rng.normal(size=(2, 9, dim)).astype("float32")
    positions = rng.integers(-3, 12, size=(2, 7, 5)).astype("int32")  # some out of range
    weights = rng.uniform(size=(2, 7, 5)).astype("float32")
    windows = _windows64(memory, positions)
    expected_scores = np.einsum("btd,btwd->btw", query.astype(np.float64), windows)
    expected_sum = np.einsum("btw,btwd->btd", weights.astype(np.float64), windows)
    scores = F.window_dot_scores(query, memory, positions)
    assert keras.backend.standardize_dtype(scores.dtype) == "float32"
    np.testing.assert_allclose(to_numpy(scores), expected_scores, **TOL)
    np.testing.assert_allclose(
        to_numpy(F.window_weighted_sum(weights, memory, positions)), expected_sum, **TOL
    )
    compiled = _xla(F.window_dot_scores)(query, memory, positions)
    np.testing.assert_allclose(to_numpy(compiled), expected_scores, **TOL)


def test_window_dot_scores_widens_half_precision():
    rng = np.random.default_rng(0)
    query = (100.0 * rng.normal(size=(1, 3, 8))).astype("float16")
    memory = (100.0 * rng.normal(size=(1, 4, 8))).astype("float16")
    positions = np.array([[[0, 1], [2, 3], [3, 0]]], "int32")
    scores = F.window_dot_scores(query, memory, positions)
    assert keras.backend.standardize_dtype(scores.dtype) == "float32"
    expected = np.einsum(
        "btd,btwd->btw", query.astype(np.float64), _windows64(memory, positions)
    )  # |scores| ~ 1e5: beyond float16's 65504
    np.testing.assert_allclose(to_numpy(scores), expected, rtol=1e-5)


def test_window_dot_scores_names_mismatched_features():
    with pytest.raises(ValueError, match=r"query\.shape=.*keys\.shape="):
        F.window_dot_scores(np.zeros((1, 2, 4)), np.zeros((1, 3, 5)), np.zeros((1, 2, 3), "int32"))


def _count_fused(monkeypatch):
    return count_calls(monkeypatch, F, scores="window_dot_scores", sums="window_weighted_sum")


CASES = [
    # alignment, mode, steps, memory, causal, use_scale, given positions
    ("local_predictive", "general", 6, 11, False, True, False),
    ("local_predictive", "dot", 5, 9, True, False, False),
    ("local_monotonic", "general", 6, 11, True, False, True),
    ("local_monotonic", "dot", 4, 13, False, True, False),  # T < a block: windows
]


@pytest.mark.parametrize(
    "alignment, mode, steps, memory, causal, use_scale, given",
    CASES,
    ids=[f"{c[0]}-{c[1]}-T{c[2]}S{c[3]}{'-given' if c[6] else ''}" for c in CASES],
)
def test_fused_windows_match_reference_under_xla(
    monkeypatch, alignment, mode, steps, memory, causal, use_scale, given
):
    rng = np.random.default_rng(steps * memory)
    query, value, mask = random_batch(
        rng, batch=3, steps=steps, memory=memory, d_query=8, d_memory=8
    )
    mask[2] = False  # a row with no valid memory: zero outputs, no NaN
    value[2] = 0.0
    positions = rng.integers(-3, memory + 3, size=(3, steps)).astype("int32") if given else None
    layer = LuongAttention(mode, alignment, window_radius=2, use_scale=use_scale)
    layer.build([query.shape, value.shape])
    randomize_weights(layer, rng)
    calls = _count_fused(monkeypatch)

    def call(q, v, m):
        return layer(
            [q, v],
            mask=[None, m],
            query_positions=positions,
            use_causal_mask=causal,
            return_attention_scores=True,
        )

    out, weights = _xla(call)(query, value, mask)
    # Fused exactly when TensorFlow's XLA compiles.
    assert calls == ({"scores": 1, "sums": 1} if FUSES else {"scores": 0, "sums": 0})
    ref_out, ref_weights = reference.attention(
        query,
        value,
        mode=mode,
        weights=layer_weights(layer),
        use_scale=use_scale,
        value_mask=mask,
        alignment=alignment,
        window_radius=2,
        query_positions=positions,
        use_causal_mask=causal,
    )
    np.testing.assert_allclose(to_numpy(weights), ref_weights, **TOL)
    np.testing.assert_allclose(to_numpy(out), ref_out, **TOL)
    assert np.all(np.isfinite(to_numpy(out)))


@pytest.mark.parametrize(
    "mode, compiled, training",
    [("general", False, None), ("general", True, True), ("concat", True, None)],
    ids=["eager", "training", "concat"],
)
def test_the_einsum_path_stays_where_fusing_does_not_pay(monkeypatch, mode, compiled, training):
    """Eager calls, `training=True` (the einsum path's gradient scatters once) and the concat
    score (not a dot product) never take the fused path."""
    rng = np.random.default_rng(4)
    query, value, mask = random_batch(rng, batch=2, steps=4, memory=9, d_query=8, d_memory=8)
    layer = LuongAttention(mode, "local_predictive", window_radius=2)
    layer.build([query.shape, value.shape])
    calls = _count_fused(monkeypatch)

    def call(q, v, m):
        return layer([q, v], mask=[None, m], training=training)

    (_xla(call) if compiled else call)(query, value, mask)
    assert calls == {"scores": 0, "sums": 0}


def _compiled_value_and_grad(fn, variables):
    """`(loss, grads)` of the zero-argument `fn`, loss and gradients in one XLA program."""
    import tensorflow as tf

    @tf.function(jit_compile=True)
    def run():
        with tf.GradientTape() as tape:
            loss = fn()
        return loss, tape.gradient(loss, [var.value for var in variables])

    loss, grads = run()
    return to_numpy(loss), [to_numpy(grad) for grad in grads]


@pytest.mark.skipif(not FUSES, reason="the fused path runs only under TensorFlow's XLA")
def test_fused_gradients_match_einsum_path(monkeypatch):
    """Gradients w.r.t. query, memory and every weight, under XLA, equal the einsum path's
    (the layers take the fused path outside training only, but a gradient may still be asked
    for there, e.g. in a custom loop that leaves `training` unset)."""
    rng = np.random.default_rng(7)
    query, value, mask = random_batch(rng, batch=2, steps=6, memory=12, d_query=8, d_memory=8)
    layer = LuongAttention("general", "local_predictive", window_radius=2, use_scale=True)
    layer.build([query.shape, value.shape])
    randomize_weights(layer, rng)
    weights = keras.ops.convert_to_tensor(np.linspace(-1.0, 1.0, 8), "float32")
    q, v = variable(query), variable(value)
    targets = [q, v, *layer.trainable_variables]

    def loss():
        return keras.ops.sum(layer([q, v], mask=[None, mask]) * weights)

    calls = _count_fused(monkeypatch)
    fused_loss, fused = _compiled_value_and_grad(loss, targets)
    assert calls["scores"] >= 1
    monkeypatch.setattr(type(layer), "_fused_windows", lambda self, features, training: False)
    plain_loss, plain = _compiled_value_and_grad(loss, targets)
    np.testing.assert_allclose(to_numpy(fused_loss), to_numpy(plain_loss), rtol=1e-5)
    for a, b in zip(fused, plain, strict=True):
        np.testing.assert_allclose(to_numpy(a), to_numpy(b), rtol=1e-4, atol=1e-5)


@pytest.mark.tensorflow_only
def test_the_private_xla_probe_answers():
    """`_xla_fuses_gathers` reads TensorFlow's private XLA context flag (no public probe
    exists): True inside `tf.function(jit_compile=True)`, False in a plain graph and eagerly.
    When TensorFlow moves the flag, this fails (the layers then run the tiles under XLA)."""
    import tensorflow as tf

    from keras_attention.layers._local_attention import _xla_fuses_gathers

    x = tf.ones((2, 3))
    answers = {}

    def probe(name):
        def run(x):
            answers[name] = _xla_fuses_gathers(x)
            return x

        return run

    tf.function(probe("xla"), jit_compile=True)(x)
    tf.function(probe("graph"))(x)
    probe("eager")(x)
    assert answers == {"xla": True, "graph": False, "eager": False}

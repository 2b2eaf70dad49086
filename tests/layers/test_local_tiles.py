"""Local attention's blocked and tiled paths (enough queries to fill a block or a tile).

The other local-attention tests use a handful of query steps, which take the gathered-window
path. Here T is large enough for `functional.blocked_window_attention` (local-m at the default
positions) and `functional.tiled_window_attention` (local-p, local-m with given positions):
outputs and weights against the float64 NumPy transcription (tests/reference.py), gradients
against the window path, and the path actually taken.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest

from keras_attention import LuongAttention
from keras_attention import functional as F
from tests import reference
from tests.backend_utils import BACKEND, jit, to_numpy, value_and_grad, variable
from tests.conftest import count_calls, layer_weights, random_batch, randomize_weights

TOL = {"rtol": 1e-5, "atol": 1e-5}
RADIUS = 2  # blocks of 32 queries, tiles of 16 queries over chunks of 16 keys
FAST = {"local_monotonic": "blocks", "local_predictive": "tiles"}  # at the default positions


def _paths(monkeypatch):
    """Count the calls of the two fast paths made through `functional`."""
    return count_calls(
        monkeypatch, F, blocks="blocked_window_attention", tiles="tiled_window_attention"
    )


def _call(layer, query, value, mask, **kwargs):
    """`layer([query, value], mask=[None, mask], **kwargs)`; under `jax.jit` on JAX, where
    eager calls keep the window path (see `LocalAttentionBase.window_plan`)."""

    def call(q, v, m):
        return layer([q, v], mask=[None, m], **kwargs)

    return (jit(call) if BACKEND == "jax" else call)(query, value, mask)


CASES = [
    # alignment, mode, steps, memory, causal, use_scale, given positions, path
    ("local_monotonic", "general", 70, 45, False, False, False, "blocks"),  # T > S, clipped
    ("local_monotonic", "dot", 40, 90, True, True, False, "blocks"),
    ("local_monotonic", "general", 40, 45, False, False, True, "tiles"),
    ("local_predictive", "general", 40, 45, False, True, False, "tiles"),
    ("local_predictive", "dot", 50, 33, True, False, False, "tiles"),
    ("local_monotonic", "dot", 40, 45, True, False, False, "tiles"),  # asked for: not the default
]


@pytest.mark.parametrize(
    "alignment, mode, steps, memory, causal, use_scale, given, path",
    CASES,
    ids=[f"{c[0]}-{c[1]}-{c[-1]}-T{c[2]}S{c[3]}" for c in CASES],
)
def test_fast_paths_match_reference(
    monkeypatch, alignment, mode, steps, memory, causal, use_scale, given, path
):
    rng = np.random.default_rng(steps + memory)
    query, value, mask = random_batch(
        rng, batch=3, steps=steps, memory=memory, d_query=4, d_memory=4
    )
    mask[2] = False  # a row with no valid memory: zero outputs, no NaN
    value[2] = 0.0
    positions = rng.integers(-3, memory + 3, size=(3, steps)).astype("int32") if given else None
    layer = LuongAttention(
        mode, alignment, window_radius=RADIUS, use_scale=use_scale, window_implementation=path
    )
    layer.build([query.shape, value.shape])
    randomize_weights(layer, rng)
    calls = _paths(monkeypatch)
    out, weights = _call(
        layer,
        query,
        value,
        mask,
        query_positions=positions,
        use_causal_mask=causal,
        return_attention_scores=True,
    )
    assert calls[path] == 1 and sum(calls.values()) == 1
    ref_out, ref_weights = reference.attention(
        query,
        value,
        mode=mode,
        weights=layer_weights(layer),
        use_scale=use_scale,
        value_mask=mask,
        alignment=alignment,
        window_radius=RADIUS,
        query_positions=positions,
        use_causal_mask=causal,
    )
    np.testing.assert_allclose(to_numpy(weights), ref_weights, **TOL)
    np.testing.assert_allclose(to_numpy(out), ref_out, **TOL)
    # The same call without weights takes the same path and gives the same output.
    plain = _call(layer, query, value, mask, query_positions=positions, use_causal_mask=causal)
    np.testing.assert_allclose(to_numpy(plain), to_numpy(out), rtol=1e-6, atol=1e-6)


def test_predictive_centres_in_one_chunk(monkeypatch):
    """Every centre in one key chunk (all queries alike): the chunk needs several tiles."""
    rng = np.random.default_rng(3)
    query = np.repeat(rng.normal(size=(2, 1, 4)), 40, axis=1).astype("float32")
    query += 1e-3 * rng.normal(size=query.shape).astype("float32")
    value = rng.normal(size=(2, 64, 4)).astype("float32")
    layer = LuongAttention(
        "general", "local_predictive", window_radius=RADIUS, window_implementation="tiles"
    )
    layer.build([query.shape, value.shape])
    randomize_weights(layer, rng)
    calls = _paths(monkeypatch)
    out, weights = _call(layer, query, value, None, return_attention_scores=True)
    assert calls["tiles"] == 1
    ref_out, ref_weights = reference.attention(
        query,
        value,
        mode="general",
        weights=layer_weights(layer),
        alignment="local_predictive",
        window_radius=RADIUS,
    )
    np.testing.assert_allclose(to_numpy(weights), ref_weights, **TOL)
    np.testing.assert_allclose(to_numpy(out), ref_out, **TOL)


@pytest.mark.slow  # seconds on TF; tens of seconds on eager JAX (op-by-op autodiff)
@pytest.mark.parametrize("alignment", ["local_monotonic", "local_predictive"])
def test_fast_path_gradients_match_window_path(monkeypatch, alignment):
    """Gradients w.r.t. query, memory and every weight equal the gathered-window path's."""
    _paths(monkeypatch)
    rng = np.random.default_rng(7)
    query, value, mask = random_batch(rng, batch=2, steps=40, memory=50, d_query=4, d_memory=4)
    layer = LuongAttention(
        "general",
        alignment,
        window_radius=RADIUS,
        use_scale=True,
        window_implementation=FAST[alignment],
    )
    layer.build([query.shape, value.shape])
    randomize_weights(layer, rng)
    q, v = variable(query), variable(value)
    targets = [q, v, *layer.trainable_variables]

    def loss():
        out = layer([q, v], mask=[None, mask])
        return keras.ops.sum(
            out * keras.ops.convert_to_tensor(np.linspace(-1.0, 1.0, 4), "float32")
        )

    fast_loss, fast = value_and_grad(loss, targets)
    layer.window_implementation = "windows"
    slow_loss, slow = value_and_grad(loss, targets)
    np.testing.assert_allclose(to_numpy(fast_loss), to_numpy(slow_loss), rtol=1e-5)
    for a, b in zip(fast, slow, strict=True):
        np.testing.assert_allclose(to_numpy(a), to_numpy(b), rtol=1e-4, atol=1e-5)


@pytest.mark.slow  # 3-4 s on TF; minutes under torch.compile
@pytest.mark.parametrize("alignment", ["local_monotonic", "local_predictive"])
def test_fast_paths_compile(monkeypatch, alignment):
    """XLA (TensorFlow, JAX) compiles both paths; PyTorch runs them eagerly."""
    _paths(monkeypatch)
    rng = np.random.default_rng(5)
    query, value, mask = random_batch(rng, batch=2, steps=40, memory=50, d_query=4, d_memory=4)
    layer = LuongAttention(
        "general", alignment, window_radius=RADIUS, window_implementation=FAST[alignment]
    )
    layer.build([query.shape, value.shape])
    eager = layer([query, value], mask=[None, mask])
    compiled = jit(lambda q, v, m: layer([q, v], mask=[None, m]))(query, value, mask)
    np.testing.assert_allclose(to_numpy(compiled), to_numpy(eager), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("training", [None, True], ids=["inference", "training"])
def test_default_path_for_free_centres(monkeypatch, compiled, training):
    """Local-p's default: fused windows under TensorFlow's XLA outside training, tiles
    everywhere else (eager JAX keeps the windows: op-by-op compilation)."""
    calls = count_calls(monkeypatch, F, tiles="tiled_window_attention", fused="window_dot_scores")
    rng = np.random.default_rng(11)
    query, value, mask = random_batch(rng, batch=2, steps=40, memory=45, d_query=8, d_memory=8)
    layer = LuongAttention("general", "local_predictive", window_radius=RADIUS)
    layer.build([query.shape, value.shape])

    def call(q, v, m):
        return layer([q, v], mask=[None, m], training=training)

    xla = compiled and BACKEND in ("tensorflow", "jax")
    out = (jit(call) if xla else call)(query, value, mask)
    if xla and BACKEND == "tensorflow" and not training:
        expected = {"tiles": 0, "fused": 1}
    elif BACKEND == "jax" and not compiled:
        expected = {"tiles": 0, "fused": 0}
    else:
        expected = {"tiles": 1, "fused": 0}
    assert calls == expected
    ref_out, _ = reference.attention(
        query,
        value,
        mode="general",
        weights=layer_weights(layer),
        value_mask=mask,
        alignment="local_predictive",
        window_radius=RADIUS,
    )
    np.testing.assert_allclose(to_numpy(out), ref_out, **TOL)


def test_window_implementation_option():
    """Validated; serialised when not "auto" (older configs unchanged); a forced implementation
    runs where it can and the windows elsewhere, and the plan says why."""
    with pytest.raises(ValueError, match="Received: window_implementation='cudnn'"):
        LuongAttention(alignment="local_monotonic", window_implementation="cudnn")
    with pytest.raises(ValueError, match="window_implementation='tiles', alignment='global'"):
        LuongAttention(window_implementation="tiles")
    layer = LuongAttention("general", "local_predictive", window_implementation="windows")
    config = layer.get_config()
    assert config["window_implementation"] == "windows"
    assert LuongAttention.from_config(config).window_implementation == "windows"
    assert "window_implementation" not in LuongAttention(alignment="local_monotonic").get_config()

    query, keys = keras.KerasTensor((2, 40, 4)), keras.KerasTensor((2, 50, 4))
    step = keras.KerasTensor((2, 1, 4))
    assert layer.window_plan(query, keys) == ("windows", "window_implementation='windows'")
    tiles = LuongAttention("general", "local_monotonic", RADIUS, window_implementation="tiles")
    assert tiles.window_plan(query, keys).path == "tiles"  # (auto: blocks)
    assert tiles.window_plan(step, keys) == ("windows", "too few queries or keys for tiles")
    blocks = LuongAttention("dot", "local_predictive", RADIUS, window_implementation="blocks")
    assert blocks.window_plan(query, keys).path == "windows"  # local-p has no blocks
    concat = LuongAttention("concat", "local_monotonic", RADIUS, window_implementation="blocks")
    assert concat.window_plan(query, keys) == (
        "windows",
        "blocks and tiles need a dot-type score",
    )
    dropout = LuongAttention("dot", "local_monotonic", RADIUS, dropout=0.1)
    assert dropout.window_plan(query, keys, training=True).path == "windows"
    assert dropout.window_plan(query, keys).path in ("blocks", "windows")  # eager JAX: windows

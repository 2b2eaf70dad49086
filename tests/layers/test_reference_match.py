"""Layer outputs against the float64 NumPy transcription of docs/design.md §2.

The transcription is tests/reference.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from keras_attention import AdditiveAttention, LuongAttention
from tests import reference
from tests.backend_utils import to_numpy
from tests.conftest import LAYER_CASES, LAYER_IDS, layer_weights, random_batch, randomize_weights

TOL = {"rtol": 1e-5, "atol": 1e-5}


def _check(layer, ref_kwargs, query, value, mask, key=None, **call_kwargs):
    inputs = [query, value] if key is None else [query, value, key]
    out, weights = layer(
        inputs,
        mask=[None, mask] + ([None] if key is not None else []),
        return_attention_scores=True,
        **call_kwargs,
    )
    ref_out, ref_weights = reference.attention(
        query, value, key, weights=layer_weights(layer), value_mask=mask, **ref_kwargs
    )
    np.testing.assert_allclose(to_numpy(weights), ref_weights, **TOL)
    np.testing.assert_allclose(to_numpy(out), ref_out, **TOL)
    return to_numpy(weights)


@pytest.mark.parametrize("case", LAYER_CASES, ids=LAYER_IDS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_reference_with_masks_and_garbage(case, seed):
    _, cls, kwargs, ref_kwargs = case
    rng = np.random.default_rng(seed)
    query, value, mask = random_batch(rng)
    layer = cls(**kwargs)
    layer.build([query.shape, value.shape])
    randomize_weights(layer, rng)
    weights = _check(layer, ref_kwargs, query, value, mask)
    assert np.all(weights[~np.broadcast_to(mask[:, None, :], weights.shape)] == 0.0)


@pytest.mark.parametrize("mode", ["dot", "general", "concat"])
@pytest.mark.parametrize("alignment", ["global", "local_monotonic", "local_predictive"])
@pytest.mark.parametrize("use_scale", [False, True])
def test_luong_use_scale_attentional_output_and_key_split(mode, alignment, use_scale):
    rng = np.random.default_rng(10)
    query, value, mask = random_batch(rng, d_query=4, d_memory=3)
    key = rng.normal(size=value.shape[:2] + (4,)).astype("float32")
    layer = LuongAttention(
        mode,
        alignment,
        window_radius=1,
        use_scale=use_scale,
        attention_units=5,
        attention_activation=None if use_scale else "tanh",
    )
    layer.build([query.shape, value.shape, key.shape])
    randomize_weights(layer, rng)
    ref = {
        "mode": mode,
        "alignment": alignment,
        "window_radius": 1,
        "use_scale": use_scale,
        "attention_units": 5,
        "attention_activation": None if use_scale else "tanh",
    }
    _check(layer, ref, query, value, mask, key=key)


@pytest.mark.parametrize("alignment", ["global", "local_monotonic"])
def test_causal_self_attention(alignment):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 6, 4)).astype("float32")
    layer = LuongAttention("general", alignment, window_radius=2)
    layer.build([x.shape, x.shape])
    randomize_weights(layer, rng)
    out, weights = layer([x, x], use_causal_mask=True, return_attention_scores=True)
    ref_out, ref_weights = reference.attention(
        x,
        x,
        mode="general",
        weights=layer_weights(layer),
        alignment=alignment,
        window_radius=2,
        use_causal_mask=True,
    )
    np.testing.assert_allclose(to_numpy(weights), ref_weights, **TOL)
    np.testing.assert_allclose(to_numpy(out), ref_out, **TOL)
    assert np.all(np.triu(to_numpy(weights), k=1) == 0.0)


@pytest.mark.parametrize("alignment", ["local_monotonic", "local_predictive"])
def test_single_step_queries_with_positions(alignment):
    rng = np.random.default_rng(4)
    _, value, mask = random_batch(rng, memory=9)
    query = rng.normal(size=(3, 5)).astype("float32")
    positions = np.array([0, 4, 8], dtype="int32")
    layer = LuongAttention("concat", alignment, window_radius=2, score_units=3)
    out, weights = layer(
        query, value, value_mask=mask, query_positions=positions, return_attention_scores=True
    )
    ref_out, ref_weights = reference.attention(
        query[:, None],
        value,
        mode="concat",
        weights=layer_weights(layer),
        value_mask=mask,
        alignment=alignment,
        window_radius=2,
        query_positions=positions[:, None],
    )
    assert out.shape == (3, 5) and weights.shape == (3, 9)
    np.testing.assert_allclose(to_numpy(weights), ref_weights[:, 0], **TOL)
    np.testing.assert_allclose(to_numpy(out), ref_out[:, 0], **TOL)


@pytest.mark.parametrize("cls", [LuongAttention, AdditiveAttention])
def test_pooling_uses_last_valid_step(cls):
    rng = np.random.default_rng(5)
    _, x, mask = random_batch(rng, memory=6)
    layer = cls()
    out, weights = layer(x, mask=mask, return_attention_scores=True)
    last = mask.sum(axis=1) - 1
    query = x[np.arange(3), last][:, None]
    mode = "dot" if cls is LuongAttention else "additive"
    ref_out, ref_weights = reference.attention(
        query, x, mode=mode, weights=layer_weights(layer), value_mask=mask
    )
    np.testing.assert_allclose(to_numpy(out), ref_out[:, 0], **TOL)
    np.testing.assert_allclose(to_numpy(weights), ref_weights[:, 0], **TOL)


def test_query_mask_zeroes_outputs():
    rng = np.random.default_rng(6)
    query, value, mask = random_batch(rng)
    query_mask = np.ones(query.shape[:2], bool)
    query_mask[1, 2:] = False
    layer = LuongAttention("general", attention_units=3)
    out = to_numpy(layer([query, value], mask=[query_mask, mask]))
    ref_out, _ = reference.attention(
        query,
        value,
        mode="general",
        weights=layer_weights(layer),
        value_mask=mask,
        query_mask=query_mask,
        attention_units=3,
    )
    np.testing.assert_allclose(out, ref_out, **TOL)
    assert np.all(out[1, 2:] == 0.0)

"""keras_attention.functional against NumPy, plus hypothesis properties of global attention."""

from __future__ import annotations

import keras
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from keras_attention import LuongAttention
from keras_attention import functional as F
from tests import reference


def test_masked_softmax_matches_reference_and_zero_rows():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(4, 3, 6)) * 10
    mask = rng.random((4, 3, 6)) > 0.4
    mask[0, 0] = False
    out = np.asarray(F.masked_softmax(scores.astype("float32"), mask))
    np.testing.assert_allclose(out, reference.masked_softmax(scores, mask), atol=1e-6)
    assert np.all(out[0, 0] == 0.0) and np.all(out[~mask] == 0.0)
    assert out.dtype == np.float32


def test_masked_softmax_is_float32_for_half_inputs():
    out = F.masked_softmax(np.array([[0.0, 20.0, 20.0]], "float16"))
    assert keras.backend.standardize_dtype(out.dtype) == "float32"
    np.testing.assert_allclose(np.asarray(out), [[0.0, 0.5, 0.5]], atol=1e-8)


def test_gather_positions_and_window_validity():
    memory = np.arange(2 * 5 * 1, dtype="float32").reshape(2, 5, 1)
    positions = F.window_positions(np.array([[0, 4], [2, 6]]), 1)
    np.testing.assert_array_equal(
        np.asarray(positions), [[[-1, 0, 1], [3, 4, 5]], [[1, 2, 3], [5, 6, 7]]]
    )
    gathered = np.asarray(F.gather_positions(memory, positions))[..., 0]
    np.testing.assert_array_equal(gathered, [[[0, 0, 1], [3, 4, 4]], [[6, 7, 8], [9, 9, 9]]])
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], bool)
    valid = np.asarray(F.window_validity(positions, 5, mask, np.array([[0, 4], [2, 9]])))
    np.testing.assert_array_equal(valid, [[[0, 1, 0], [1, 1, 0]], [[1, 1, 0], [0, 0, 0]]])


def test_expand_window_weights_lays_out_slots():
    weights = np.array([[[0.25, 0.5, 0.125]]], "float32")
    full = np.asarray(F.expand_window_weights(weights, np.array([[-1]]), 4))
    np.testing.assert_array_equal(full, [[[0.5, 0.125, 0.0, 0.0]]])
    full = np.asarray(F.expand_window_weights(weights, np.array([[2]]), 4))
    np.testing.assert_array_equal(full, [[[0.0, 0.0, 0.25, 0.5]]])


def test_gaussian_window_and_last_valid_positions():
    g = np.asarray(F.gaussian_window(np.array([[[1, 2, 3]]]), np.array([[2.5]]), 2))
    np.testing.assert_allclose(g, np.exp(-np.square([[[-1.5, -0.5, 0.5]]]) / 2.0), rtol=1e-6)
    mask = np.array([[1, 1, 0, 0], [1, 0, 1, 0], [0, 0, 0, 0]], bool)
    np.testing.assert_array_equal(np.asarray(F.last_valid_positions(mask)), [1, 2, 0])
    np.testing.assert_array_equal(np.asarray(F.valid_lengths(mask)), [2, 2, 0])


# ------------------------------------------------------------------- properties

_LAYERS = {mode: LuongAttention(mode, units=3) for mode in ("dot", "general", "concat")}


@st.composite
def _attention_inputs(draw):
    batch = draw(st.integers(1, 3))
    steps = draw(st.integers(1, 4))
    memory = draw(st.integers(1, 7))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    query = rng.normal(size=(batch, steps, 4)).astype("float32")
    value = rng.normal(size=(batch, memory, 4)).astype("float32")
    mask = rng.random((batch, memory)) > draw(st.floats(0.0, 0.8))
    return query, value, mask, rng


_settings = settings(max_examples=25, deadline=None)


@_settings
@given(_attention_inputs(), st.sampled_from(sorted(_LAYERS)))
def test_weights_are_a_distribution_over_valid_positions(inputs, mode):
    query, value, mask, _ = inputs
    _, weights = _LAYERS[mode]([query, value], mask=[None, mask], return_attention_scores=True)
    weights = np.asarray(weights)
    assert np.all(weights >= 0.0)
    assert np.all(weights[np.broadcast_to(~mask[:, None, :], weights.shape)] == 0.0)
    sums = weights.sum(-1)
    has_valid = mask.any(-1)
    np.testing.assert_allclose(sums[has_valid], 1.0, rtol=1e-5)
    assert np.all(sums[~has_valid] == 0.0)


@_settings
@given(_attention_inputs(), st.sampled_from(sorted(_LAYERS)), st.integers(1, 5))
def test_extra_masked_padding_changes_nothing(inputs, mode, extra):
    query, value, mask, rng = inputs
    layer = _LAYERS[mode]
    out, weights = layer([query, value], mask=[None, mask], return_attention_scores=True)
    garbage = 100 * rng.normal(size=(value.shape[0], extra, 4)).astype("float32")
    padded_mask = np.concatenate([mask, np.zeros((mask.shape[0], extra), bool)], axis=1)
    out2, weights2 = layer(
        [query, np.concatenate([value, garbage], axis=1)],
        mask=[None, padded_mask],
        return_attention_scores=True,
    )
    np.testing.assert_allclose(np.asarray(out2), np.asarray(out), atol=1e-5)
    np.testing.assert_allclose(
        np.asarray(weights2)[..., : value.shape[1]], np.asarray(weights), atol=1e-6
    )


@_settings
@given(_attention_inputs(), st.sampled_from(sorted(_LAYERS)))
def test_permuting_memory_permutes_weights(inputs, mode):
    query, value, mask, rng = inputs
    layer = _LAYERS[mode]
    perm = rng.permutation(value.shape[1])
    out, weights = layer([query, value], mask=[None, mask], return_attention_scores=True)
    out_p, weights_p = layer(
        [query, value[:, perm]], mask=[None, mask[:, perm]], return_attention_scores=True
    )
    np.testing.assert_allclose(np.asarray(weights_p), np.asarray(weights)[..., perm], atol=1e-6)
    np.testing.assert_allclose(np.asarray(out_p), np.asarray(out), atol=1e-5)

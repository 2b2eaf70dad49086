"""keras_attention.functional against NumPy, plus hypothesis properties of global attention."""

from __future__ import annotations

import keras
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from keras_attention import LuongAttention
from keras_attention import functional as F
from tests import reference
from tests.backend_utils import enable_float64, to_numpy


def test_masked_softmax_matches_reference_and_zero_rows():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(4, 3, 6)) * 10
    mask = rng.random((4, 3, 6)) > 0.4
    mask[0, 0] = False
    out = to_numpy(F.masked_softmax(scores.astype("float32"), mask))
    np.testing.assert_allclose(out, reference.masked_softmax(scores, mask), atol=1e-6)
    assert np.all(out[0, 0] == 0.0) and np.all(out[~mask] == 0.0)
    assert out.dtype == np.float32


def test_masked_softmax_with_logits_beyond_any_fixed_mask_value():
    # Valid logits far below -1e9 (or near the float32 limits) must still win over padding.
    scores = np.array([[-5e9, -6e9, 0.0, 3.0], [-3e38, -2e38, 3e38, 1.0]], "float32")
    mask = np.array([[True, True, False, False], [True, True, False, False]])
    out = to_numpy(F.masked_softmax(scores, mask))
    np.testing.assert_array_equal(out, [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]])
    with enable_float64():
        scores64 = np.array([[-1e300, -2e300, 1e300]])
        out = to_numpy(F.masked_softmax(scores64, np.array([[True, True, False]])))
    np.testing.assert_array_equal(out, [[1.0, 0.0, 0.0]])


def test_masked_softmax_is_float32_for_half_inputs():
    out = F.masked_softmax(np.array([[0.0, 20.0, 20.0]], "float16"))
    assert keras.backend.standardize_dtype(out.dtype) == "float32"
    np.testing.assert_allclose(to_numpy(out), [[0.0, 0.5, 0.5]], atol=1e-8)


def test_gather_positions_and_window_validity():
    memory = np.arange(2 * 5 * 1, dtype="float32").reshape(2, 5, 1)
    positions = F.window_positions(np.array([[0, 4], [2, 6]]), 1)
    np.testing.assert_array_equal(
        to_numpy(positions), [[[-1, 0, 1], [3, 4, 5]], [[1, 2, 3], [5, 6, 7]]]
    )
    gathered = to_numpy(F.gather_positions(memory, positions))[..., 0]
    np.testing.assert_array_equal(gathered, [[[0, 0, 1], [3, 4, 4]], [[6, 7, 8], [9, 9, 9]]])
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], bool)
    valid = to_numpy(F.window_validity(positions, 5, mask, np.array([[0, 4], [2, 9]])))
    np.testing.assert_array_equal(valid, [[[0, 1, 0], [1, 1, 0]], [[1, 1, 0], [0, 0, 0]]])


def test_expand_window_weights_lays_out_slots():
    weights = np.array([[[0.25, 0.5, 0.125]]], "float32")
    full = to_numpy(F.expand_window_weights(weights, np.array([[-1]]), 4))
    np.testing.assert_array_equal(full, [[[0.5, 0.125, 0.0, 0.0]]])
    full = to_numpy(F.expand_window_weights(weights, np.array([[2]]), 4))
    np.testing.assert_array_equal(full, [[[0.0, 0.0, 0.25, 0.5]]])


def test_gaussian_window_and_last_valid_positions():
    g = to_numpy(F.gaussian_window(np.array([[[1, 2, 3]]]), np.array([[2.5]]), 2))
    np.testing.assert_allclose(g, np.exp(-np.square([[[-1.5, -0.5, 0.5]]]) / 2.0), rtol=1e-6)
    mask = np.array([[1, 1, 0, 0], [1, 0, 1, 0], [0, 0, 0, 0]], bool)
    np.testing.assert_array_equal(to_numpy(F.last_valid_positions(mask)), [1, 2, 0])
    np.testing.assert_array_equal(to_numpy(F.valid_lengths(mask)), [2, 2, 0])


# ------------------------------------------------------------------- properties

_LAYERS = {mode: LuongAttention(mode, score_units=3) for mode in ("dot", "general", "concat")}


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
    weights = to_numpy(weights)
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
    np.testing.assert_allclose(to_numpy(out2), to_numpy(out), atol=1e-5)
    np.testing.assert_allclose(
        to_numpy(weights2)[..., : value.shape[1]], to_numpy(weights), atol=1e-6
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
    np.testing.assert_allclose(to_numpy(weights_p), to_numpy(weights)[..., perm], atol=1e-6)
    np.testing.assert_allclose(to_numpy(out_p), to_numpy(out), atol=1e-5)

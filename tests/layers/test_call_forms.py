"""Call forms of docs/design.md §3, equivalence with keras.layers.Attention, and corner cases."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from keras_attention import AdditiveAttention, BahdanauAttention, LuongAttention
from tests import reference
from tests.backend_utils import to_numpy
from tests.conftest import LAYER_CASES, LAYER_IDS, layer_weights, random_batch, randomize_weights


def test_bahdanau_alias():
    assert BahdanauAttention is AdditiveAttention


@pytest.mark.parametrize("seed", [0, 1])
def test_dot_equals_keras_attention(seed):
    rng = np.random.default_rng(seed)
    query, value, mask = random_batch(rng, steps=5, memory=8)
    key = rng.normal(size=value.shape).astype("float32")
    query_mask = rng.random(query.shape[:2]) > 0.3
    for inputs, masks in (
        ([query, value], [query_mask, mask]),
        ([query, value, key], [query_mask, mask]),
    ):
        ours, ours_w = LuongAttention()(inputs, mask=masks, return_attention_scores=True)
        theirs, theirs_w = keras.layers.Attention()(
            inputs, mask=masks, return_attention_scores=True
        )
        np.testing.assert_allclose(to_numpy(ours), to_numpy(theirs), atol=1e-6, rtol=1e-6)
        np.testing.assert_allclose(to_numpy(ours_w), to_numpy(theirs_w), atol=1e-6)
    causal, _ = LuongAttention()([query, query], use_causal_mask=True, return_attention_scores=True)
    theirs = keras.layers.Attention()([query, query], use_causal_mask=True)
    np.testing.assert_allclose(to_numpy(causal), to_numpy(theirs), atol=1e-6, rtol=1e-6)


def test_call_forms_agree():
    rng = np.random.default_rng(1)
    query, value, mask = random_batch(rng)
    layer = LuongAttention("general")
    as_list = to_numpy(layer([query, value], mask=[None, mask]))
    as_args = to_numpy(layer(query, value, value_mask=mask))
    as_key = to_numpy(layer([query, value, value], mask=[None, mask, None]))
    as_kwargs = to_numpy(layer(query, value=value, key=value, key_mask=mask))
    for other in (as_args, as_key, as_kwargs):
        np.testing.assert_array_equal(as_list, other)
    step = to_numpy(layer(query[:, 2], value, value_mask=mask))
    np.testing.assert_allclose(step, as_list[:, 2], atol=1e-6)


@pytest.mark.parametrize("cls", [LuongAttention, AdditiveAttention])
def test_keras_masks_are_picked_up(cls):
    rng = np.random.default_rng(2)
    tokens = rng.integers(1, 20, size=(3, 9))
    tokens[1, 5:] = 0
    tokens[2, 2:] = 0
    src = keras.Input((None,), dtype="int32")
    tgt = keras.Input((None,), dtype="int32")
    embed = keras.layers.Embedding(20, 6, mask_zero=True)
    layer = cls()
    out, weights = layer([embed(tgt), embed(src)], return_attention_scores=True)
    model = keras.Model([tgt, src], [out, weights])
    target = rng.integers(1, 20, size=(3, 4))
    target[0, 3:] = 0
    out, weights = (to_numpy(t) for t in model.predict([target, tokens], verbose=0))
    assert np.all(weights[tokens[:, None, :].repeat(4, 1) == 0] == 0.0)
    assert np.all(out[0, 3] == 0.0)  # query padding gives a zero output
    # The output keeps the query mask, like keras.layers.Attention.
    assert out_mask_of(layer, embed, target, tokens) == [True, True, True, False]


def out_mask_of(layer, embed, target, tokens):
    out = layer([embed(target), embed(tokens)])
    return to_numpy(out._keras_mask)[0].tolist()


def test_pooling_in_sequential_and_mask_not_propagated():
    model = keras.Sequential(
        [
            keras.Input((None,), dtype="int32"),
            keras.layers.Embedding(10, 4, mask_zero=True),
            keras.layers.LSTM(6, return_sequences=True),
            LuongAttention(),
            keras.layers.Dense(3, activation="softmax"),
        ]
    )
    x = np.array([[1, 2, 3, 0, 0], [4, 5, 6, 7, 8]])
    y = np.array([0, 2])
    model.compile("adam", "sparse_categorical_crossentropy")
    model.fit(x, y, epochs=1, verbose=0)
    out = model.predict(x, verbose=0)
    assert out.shape == (2, 3)
    # Padding after the last valid step changes nothing.
    padded = np.concatenate([x, np.zeros((2, 3), int)], axis=1)
    np.testing.assert_allclose(model.predict(padded, verbose=0), out, atol=1e-6)


def test_symbolic_matches_eager_shapes():
    for layer, args, expected in [
        (LuongAttention(), ((None, 3, 4), (None, 5, 4)), [(None, 3, 4), (None, 3, 5)]),
        (LuongAttention(), ((None, 4), (None, 5, 4)), [(None, 4), (None, 5)]),
        (AdditiveAttention(), ((None, 5, 4),), [(None, 4), (None, 5)]),
        (
            LuongAttention("general", attention_units=7),
            ((None, None, 3), (None, None, 4)),
            [(None, None, 7), (None, None, None)],
        ),
    ]:
        inputs = [keras.Input(shape[1:]) for shape in args]
        out, w = layer(*inputs, return_attention_scores=True)
        assert [tuple(out.shape), tuple(w.shape)] == expected
        concrete = [np.ones((2,) + tuple(d or 5 for d in s[1:]), "float32") for s in args]
        out, w = layer(*concrete, return_attention_scores=True)
        assert all(a is None or a == b for a, b in zip(expected[0][1:], out.shape[1:]))
        assert len(w.shape) == len(expected[1])


# ---------------------------------------------------------------- corner cases


@pytest.mark.parametrize("case", LAYER_CASES, ids=LAYER_IDS)
def test_one_memory_step_context_is_that_step(case):
    _, cls, kwargs, _ = case
    rng = np.random.default_rng(0)
    query = rng.normal(size=(2, 3, 5)).astype("float32")
    value = rng.normal(size=(2, 1, 5)).astype("float32")
    out, weights = cls(**kwargs)([query, value], return_attention_scores=True)
    expected_w = 1.0
    if kwargs.get("alignment") == "local_predictive":  # exp(-(0 - p)^2 / (2 sigma^2)), p in [0, 1]
        expected_w = None
    if expected_w is None:
        w = to_numpy(weights)
        assert np.all((w > 0) & (w <= 1))
        np.testing.assert_allclose(to_numpy(out), w * value, rtol=1e-6)
    else:
        np.testing.assert_array_equal(to_numpy(weights), 1.0)
        np.testing.assert_array_equal(to_numpy(out), np.broadcast_to(value, (2, 3, 5)))


@pytest.mark.parametrize(
    "cls,kwargs",
    [(LuongAttention, {}), (LuongAttention, {"score_mode": "general"}), (AdditiveAttention, {})],
)
def test_equal_scores_give_uniform_weights(cls, kwargs):
    value = np.tile(np.arange(1.0, 4.0, dtype="float32"), (1, 6, 1))  # identical keys
    _, weights = cls(**kwargs)([np.ones((1, 2, 3), "float32"), value], return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(weights), 1.0 / 6.0, rtol=1e-6)


def test_dominant_score_is_hard_selection():
    value = np.zeros((1, 5, 2), "float32")
    value[0, 3] = [100.0, 0.0]
    query = np.array([[[100.0, 0.0]]], "float32")
    out, weights = LuongAttention()([query, value], return_attention_scores=True)
    np.testing.assert_array_equal(to_numpy(weights), [[[0, 0, 0, 1, 0]]])
    np.testing.assert_array_equal(to_numpy(out), value[:, 3:4])


@pytest.mark.parametrize("case", LAYER_CASES, ids=LAYER_IDS)
@pytest.mark.parametrize("magnitude", [1e4, -1e4])
@pytest.mark.parametrize("memory", ["alternating", "opposed"])
def test_extreme_logits_and_fully_masked_rows_are_finite(case, magnitude, memory):
    _, cls, kwargs, _ = case
    query = np.full((2, 3, 4), magnitude, "float32")
    value = np.full((2, 6, 4), magnitude, "float32")
    if memory == "alternating":  # scores of ±4e8 (dot)
        value[:, ::2] *= -1
    else:  # every valid dot score is -4e9: below any "large negative" padding stand-in
        value *= -10.0
    mask = np.ones((2, 6), bool)
    mask[1] = False  # a row with no valid memory at all
    layer = cls(**kwargs)
    out, weights = layer([query, value], mask=[None, mask], return_attention_scores=True)
    out, weights = to_numpy(out), to_numpy(weights)
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(weights))
    assert np.all(weights[1] == 0.0) and np.all(out[1] == 0.0)
    if kwargs.get("alignment") != "local_predictive":
        np.testing.assert_allclose(weights[0].sum(-1), 1.0, rtol=1e-6)


@pytest.mark.parametrize(
    "alignment,radius",
    [
        ("local_monotonic", 0),
        ("local_monotonic", 1),
        ("local_monotonic", 3),
        ("local_predictive", 1),
        ("local_predictive", 3),
    ],
)
def test_local_window_support(alignment, radius):
    rng = np.random.default_rng(radius)
    query, value, mask = random_batch(rng, steps=12, memory=20)
    layer = LuongAttention("general", alignment, window_radius=radius)
    layer.build([query.shape, value.shape])
    randomize_weights(layer, rng, scale=2.0)
    _, weights = layer([query, value], mask=[None, mask], return_attention_scores=True)
    weights = to_numpy(weights)
    params = layer_weights(layer)
    for b in range(3):
        s_b = mask[b].sum()
        for t in range(12):
            if alignment == "local_monotonic":
                p = min(t, s_b - 1)
            else:
                p = reference.predictive_position(query[b, t], s_b, params)
            centre = int(np.floor(p + 0.5))
            outside = np.ones(20, bool)
            outside[max(centre - radius, 0) : centre + radius + 1] = False
            assert np.all(weights[b, t, outside] == 0.0), (b, t, centre)
            assert np.all(weights[b, t, ~mask[b]] == 0.0)
            assert weights[b, t].sum() > 0

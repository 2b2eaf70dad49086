"""Bad input to the attention layers: a clear error, or a documented, tested result.

Extends tests/layers/test_errors.py (not repeated here). Every error row asserts the error
type and a message naming the argument and the received value. Documented results:

- an empty batch (B = 0) or no query steps (T = 0) gives empty outputs of the right shape;
- no memory steps (S = 0) is a row with no valid position: zero weights `[B, T, 0]` and a zero
  context (Luong's h̃ = act(W_c [s; 0]) with `attention_units`);
- all-padding memory rows give exactly zero weights and context;
- NaN/Inf in padded memory positions or padded query steps never reach the outputs (padding
  is ignored exactly: the results equal those with zeros there); NaN in a valid memory
  position propagates to the rows that attend to it and nowhere else (garbage in);
- masks may be boolean or 0/1 numbers (non-zero = valid), with identical results.
"""

from __future__ import annotations

import numpy as np
import pytest
from keras import ops

from keras_attention import AdditiveAttention, LuongAttention
from tests.conftest import LAYER_CASES, LAYER_IDS, random_batch

Q = np.ones((2, 3, 4), "float32")
V = np.ones((2, 5, 4), "float32")
LOCAL = ("local_monotonic", "local_predictive")
# A string mask: our message on TensorFlow; on JAX and PyTorch Keras converts NumPy arguments
# before `call` runs, and its conversion error (naming the value) comes first.
STRING_MASK = r"{name}.dtype=.*(str|U1)|could not convert string to float: .*'|Invalid dtype: str"


def _np(x):
    return np.asarray(ops.convert_to_numpy(x))


# ---------------------------------------------------------------- constructor arguments
@pytest.mark.parametrize(
    "cls, kwargs, match",
    [
        (LuongAttention, {"score_mode": None}, "score_mode=None"),
        (LuongAttention, {"score_mode": 1}, "score_mode=1"),
        (LuongAttention, {"alignment": None}, "alignment=None"),
        (LuongAttention, {"window_radius": "3"}, "window_radius='3'"),
        (LuongAttention, {"window_radius": None}, "window_radius=None"),
        (LuongAttention, {"window_radius": 2.0}, r"window_radius=2\.0"),
        (LuongAttention, {"score_units": "8"}, "score_units='8'"),
        (LuongAttention, {"score_units": True}, "score_units=True"),
        (LuongAttention, {"attention_units": 2.0}, r"attention_units=2\.0"),
        (LuongAttention, {"dropout": None}, "dropout=None"),
        (LuongAttention, {"dropout": -0.1}, r"dropout=-0\.1"),
        (LuongAttention, {"dropout": float("nan")}, "dropout=nan"),
        (LuongAttention, {"use_scale": "no"}, "use_scale='no'"),
        (LuongAttention, {"use_scale": None}, "use_scale=None"),
        (LuongAttention, {"attention_activation": "bogus"}, "attention_activation='bogus'"),
        (LuongAttention, {"kernel_initializer": "bogus"}, "kernel_initializer='bogus'"),
        (LuongAttention, {"kernel_regularizer": "bogus"}, "kernel_regularizer='bogus'"),
        (LuongAttention, {"kernel_constraint": "bogus"}, "kernel_constraint='bogus'"),
        (AdditiveAttention, {"score_units": 2.0}, r"score_units=2\.0"),
        (AdditiveAttention, {"score_units": 0}, "score_units=0"),
        (AdditiveAttention, {"normalize": "yes"}, "normalize='yes'"),
        (AdditiveAttention, {"use_scale": 2}, "use_scale=2"),
        (AdditiveAttention, {"dropout": 1.0}, r"dropout=1\.0"),
        (AdditiveAttention, {"kernel_initializer": 3.5}, r"kernel_initializer=3\.5"),
    ],
)
def test_bad_constructor_argument(cls, kwargs, match):
    with pytest.raises(ValueError, match=match):
        cls(**kwargs)


def test_flags_accept_bools_and_tuner_zero_one():
    # keras-tuner's hp.Choice([True, False]) gives 0/1; NumPy booleans are booleans.
    assert LuongAttention(use_scale=1).use_scale is True
    assert AdditiveAttention(normalize=np.bool_(False)).normalize is False


# ---------------------------------------------------------------- call arguments
@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: LuongAttention()(None, V), "query=None"),
        (lambda: LuongAttention()(np.ones((4,), "float32"), V), r"query.shape=\(4,\)"),
        (
            lambda: LuongAttention("general")(Q, V, np.ones((2, 5, 4, 1), "float32")),
            r"key.shape=\(2, 5, 4, 1\)",
        ),
        (
            lambda: LuongAttention()(Q, V, value_mask=np.ones((2, 5, 1), bool)),
            r"value_mask.shape=\(2, 5, 1\)",
        ),
        (
            lambda: LuongAttention()(Q, V, key_mask=np.ones((2, 6), bool)),
            r"key_mask.shape=\(2, 6\)",
        ),
        (
            lambda: LuongAttention()(Q, V, value_mask=np.full((2, 5), "a")),
            STRING_MASK.format(name="value_mask"),
        ),
        (
            lambda: LuongAttention()(Q, V, query_mask=np.full((2, 3), "x")),
            STRING_MASK.format(name="query_mask"),
        ),
        (
            lambda: LuongAttention(alignment="local_monotonic")(Q, V, query_positions="a"),
            "query_positions='a'",
        ),
        (
            lambda: LuongAttention(alignment="local_monotonic")(
                Q, V, query_positions=np.full((2, 3), 0.7, "float32")
            ),
            "query_positions.dtype=float32",
        ),
        (
            lambda: LuongAttention(alignment="local_monotonic")(
                Q, V, query_positions=np.zeros((2, 7), "int32")
            ),
            r"query_positions.shape=\(2, 7\)",
        ),
        (
            lambda: LuongAttention(alignment="local_monotonic")(
                Q[:, 0], V, query_positions=np.zeros((3,), "int32")
            ),
            r"query_positions.shape=\(3,\)",
        ),
    ],
)
def test_bad_call_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("mask_dtype", ["int32", "float32", "uint8"])
def test_numeric_masks_equal_boolean_masks(mask_dtype):
    rng = np.random.default_rng(0)
    query, value, mask = random_batch(rng)
    layer = LuongAttention("general", alignment="local_predictive", window_radius=2)
    expected = layer(query, value, value_mask=mask, return_attention_scores=True)
    got = layer(query, value, value_mask=mask.astype(mask_dtype), return_attention_scores=True)
    for a, b in zip(expected, got):
        np.testing.assert_array_equal(_np(a), _np(b))


def test_positions_of_every_documented_form_are_accepted():
    layer = LuongAttention(alignment="local_monotonic", window_radius=1)
    full = _np(layer(Q, V, query_positions=np.array([[0, 1, 2]] * 2, "int32")))
    np.testing.assert_array_equal(_np(layer(Q, V, query_positions=np.arange(3))), full)
    np.testing.assert_array_equal(_np(layer(Q, V)), full)
    step = _np(layer(Q[:, 1], V, query_positions=np.array([[1], [1]], "int32")))
    np.testing.assert_array_equal(step, full[:, 1])
    np.testing.assert_array_equal(_np(layer(Q[:, 1], V, query_positions=1)), step)


# ---------------------------------------------------------------- empty and padded inputs
def _layer(cls, kwargs, **extra):
    return cls(**{**kwargs, **extra})


@pytest.mark.parametrize("case_id, cls, kwargs, _", LAYER_CASES, ids=LAYER_IDS)
@pytest.mark.parametrize(
    "batch, steps, memory",
    [(0, 3, 5), (2, 0, 5), (2, 3, 0), (0, 0, 0)],
    ids=["B=0", "T=0", "S=0", "all-empty"],
)
def test_empty_dimensions_give_empty_or_zero_outputs(case_id, cls, kwargs, _, batch, steps, memory):
    rng = np.random.default_rng(1)
    query = rng.normal(size=(batch, steps, 5)).astype("float32")
    value = rng.normal(size=(batch, memory, 5)).astype("float32")
    out, weights = _layer(cls, kwargs)(query, value, return_attention_scores=True)
    assert tuple(out.shape) == (batch, steps, 5)
    assert tuple(weights.shape) == (batch, steps, memory)
    # No memory: the context is exactly zero, never NaN.
    np.testing.assert_array_equal(_np(out), np.zeros((batch, steps, 5)))


@pytest.mark.parametrize("alignment", ["global", *LOCAL])
def test_no_memory_with_attention_units_is_the_attentional_output_of_a_zero_context(alignment):
    rng = np.random.default_rng(2)
    query = rng.normal(size=(2, 3, 4)).astype("float32")
    layer = LuongAttention("concat", alignment, window_radius=1, attention_units=6)
    out = _np(layer(query, np.zeros((2, 0, 4), "float32")))
    kernel = _np(layer.attention_kernel.numpy()).astype(np.float64)
    expected = np.tanh(np.concatenate([query, np.zeros_like(query)], -1) @ kernel)
    np.testing.assert_allclose(out, expected, atol=1e-5)


@pytest.mark.parametrize("case_id, cls, kwargs, _", LAYER_CASES, ids=LAYER_IDS)
def test_all_padding_rows_give_zero_weights_and_context(case_id, cls, kwargs, _):
    rng = np.random.default_rng(3)
    query, value, mask = random_batch(rng)
    mask[1] = False
    out, weights = _layer(cls, kwargs)(query, value, value_mask=mask, return_attention_scores=True)
    assert np.all(_np(weights)[1] == 0.0) and np.all(_np(out)[1] == 0.0)
    assert np.all(np.isfinite(_np(out))) and np.all(np.isfinite(_np(weights)))


@pytest.mark.parametrize("garbage", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("case_id, cls, kwargs, _", LAYER_CASES, ids=LAYER_IDS)
def test_non_finite_padding_is_ignored_exactly(case_id, cls, kwargs, _, garbage):
    rng = np.random.default_rng(4)
    query, value, mask = random_batch(rng)
    key = rng.normal(size=value.shape).astype("float32")
    layer = _layer(cls, kwargs)
    clean_value, clean_key = (
        np.where(mask[..., None], value, 0.0),
        np.where(mask[..., None], key, 0),
    )
    dirty_value = np.where(mask[..., None], value, garbage).astype("float32")
    dirty_key = np.where(mask[..., None], key, garbage).astype("float32")
    for args in ((clean_value,), (clean_value, clean_key)):
        expected = layer(query, *args, value_mask=mask, return_attention_scores=True)
        dirty = (dirty_value,) if len(args) == 1 else (dirty_value, dirty_key)
        got = layer(query, *dirty, value_mask=mask, return_attention_scores=True)
        for a, b in zip(expected, got):
            np.testing.assert_array_equal(_np(b), _np(a))
            assert np.all(np.isfinite(_np(b)))


@pytest.mark.parametrize("case_id, cls, kwargs, _", LAYER_CASES, ids=LAYER_IDS)
def test_nan_in_a_valid_memory_position_propagates_to_that_row_only(case_id, cls, kwargs, _):
    rng = np.random.default_rng(5)
    query, value, mask = random_batch(rng)
    layer = _layer(cls, kwargs)
    clean = _np(layer(query, value, value_mask=mask))
    dirty_value = value.copy()
    if kwargs.get("alignment", "global") == "global":
        dirty_value[0, 0] = np.nan  # every query of row 0 attends to position 0
    else:
        dirty_value[0, mask[0]] = np.nan  # every window of row 0 holds a NaN
    dirty = _np(layer(query, dirty_value, value_mask=mask))
    assert np.all(np.isnan(dirty[0]))
    np.testing.assert_array_equal(dirty[1:], clean[1:])


def test_inf_in_a_valid_memory_position_gives_non_finite_outputs_in_that_row():
    rng = np.random.default_rng(6)
    query, value, mask = random_batch(rng)
    value[0, 0] = np.inf
    out = _np(LuongAttention()(query, value, value_mask=mask))
    assert not np.all(np.isfinite(out[0]))
    assert np.all(np.isfinite(out[1:]))


@pytest.mark.parametrize("attention_units", [None, 3])
def test_nan_in_padded_query_steps_gives_zero_outputs(attention_units):
    rng = np.random.default_rng(7)
    query, value, mask = random_batch(rng)
    query_mask = np.ones(query.shape[:2], bool)
    query_mask[1, 2:] = False
    layer = LuongAttention("general", attention_units=attention_units)
    clean = _np(layer([query, value], mask=[query_mask, mask]))
    dirty_query = np.where(query_mask[..., None], query, np.nan).astype("float32")
    dirty = _np(layer([dirty_query, value], mask=[query_mask, mask]))
    np.testing.assert_array_equal(dirty, clean)
    assert np.all(dirty[1, 2:] == 0.0)


# ---------------------------------------------------------------- attention pooling
@pytest.mark.parametrize("cls", [LuongAttention, AdditiveAttention])
def test_pooling_empty_and_padded_sequences(cls):
    layer = cls()
    assert tuple(layer(np.ones((0, 5, 4), "float32")).shape) == (0, 4)
    np.testing.assert_array_equal(_np(layer(np.ones((2, 0, 4), "float32"))), np.zeros((2, 4)))
    x = np.random.default_rng(8).normal(size=(2, 5, 4)).astype("float32")
    mask = np.array([[True] * 3 + [False] * 2, [False] * 5])
    clean = _np(layer(np.where(mask[..., None], x, 0.0).astype("float32"), mask=mask))
    dirty = _np(layer(np.where(mask[..., None], x, np.nan).astype("float32"), mask=mask))
    np.testing.assert_array_equal(dirty, clean)
    np.testing.assert_array_equal(dirty[1], np.zeros(4))  # an all-padding row pools zeros

"""Bad input to the attentional cells and AttentionRNN: a clear error or a documented result.

Extends tests/cells/test_attention_rnn.py::test_errors. Documented results: an empty batch
gives empty outputs; a sequence with no steps (T = 0) gives `[B, 0, d]` outputs (the zero
output with `return_sequences=False`) and returns the initial state unchanged; a memory with
no steps (S = 0) is decoded exactly as an all-padding memory; NaN in padded decoder steps or
padded memory positions never reaches outputs, alignments or states.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest

from keras_attention import (
    AdditiveAttention,
    AttentionRNN,
    BahdanauAttentionCell,
    LuongAttention,
    LuongAttentionCell,
)
from tests.test_bad_input_layers import STRING_MASK

UNITS = 4
SEQ = np.ones((2, 3, 5), "float32")
MEM = np.ones((2, 4, 6), "float32")


def _luong(**kwargs):
    return LuongAttentionCell(keras.layers.LSTMCell(UNITS), LuongAttention("general"), **kwargs)


def _bahdanau():
    return BahdanauAttentionCell(keras.layers.GRUCell(UNITS), AdditiveAttention(score_units=3))


CELLS = {"luong_lstm": _luong, "bahdanau_gru": _bahdanau}


def _np(x):
    return np.asarray(keras.ops.convert_to_numpy(x))


# ---------------------------------------------------------------- constructor arguments
@pytest.mark.parametrize(
    "make, error, match",
    [
        (lambda: _luong(input_feeding="no"), ValueError, "input_feeding='no'"),
        (lambda: _luong(attention_units="8"), ValueError, "attention_units='8'"),
        (lambda: _luong(attention_units=True), ValueError, "attention_units=True"),
        (lambda: _luong(units="8"), ValueError, "Received: units='8'"),  # the old name
        (lambda: _luong(attention_activation="bogus"), ValueError, "attention_activation='bogus'"),
        (lambda: _luong(kernel_initializer="bogus"), ValueError, "kernel_initializer='bogus'"),
        (lambda: LuongAttentionCell(None, LuongAttention()), TypeError, "cell=None"),
        (
            lambda: BahdanauAttentionCell(keras.layers.GRUCell(3), None),
            TypeError,
            "attention=None",
        ),
        (
            lambda: BahdanauAttentionCell("gru", AdditiveAttention()),
            TypeError,
            "cell='gru'",
        ),
        (lambda: AttentionRNN(None), TypeError, "cell=None"),
        (lambda: AttentionRNN(_luong(), return_sequences="no"), ValueError, "='no'"),
        (lambda: AttentionRNN(_luong(), return_state=None), ValueError, "return_state=None"),
        (
            lambda: AttentionRNN(_luong(), return_attention_scores=2),
            ValueError,
            "return_attention_scores=2",
        ),
    ],
)
def test_bad_constructor_argument(make, error, match):
    with pytest.raises(error, match=match):
        make()


# ---------------------------------------------------------------- call arguments
@pytest.mark.parametrize(
    "call, match",
    [
        (lambda rnn: rnn(None, MEM), "sequences=None"),
        (lambda rnn: rnn(SEQ, None), "memory=None"),
        (lambda rnn: rnn(np.ones((2, 5), "float32"), MEM), r"sequences.shape=\(2, 5\)"),
        (
            lambda rnn: rnn(SEQ, MEM, memory_mask=np.ones((2, 4, 1), bool)),
            r"memory_mask.shape=\(2, 4, 1\)",
        ),
        (lambda rnn: rnn(SEQ, MEM, mask=np.full((2, 3), "a")), STRING_MASK.format(name="mask")),
        (
            lambda rnn: rnn(SEQ, MEM, initial_state=[np.zeros((3, UNITS), "float32")] * 2),
            r"initial_state\[0\].shape=\(3, 4\)",
        ),
        (
            lambda rnn: rnn(SEQ, MEM, initial_state=[np.zeros((UNITS,), "float32")] * 2),
            r"initial_state\[0\].shape=\(4,\)",
        ),
    ],
)
def test_bad_call_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call(AttentionRNN(_luong()))


def test_dot_score_with_different_sizes_names_both():
    rnn = AttentionRNN(LuongAttentionCell(keras.layers.LSTMCell(UNITS), LuongAttention()))
    with pytest.raises(ValueError, match="query size 4 and key size 6"):
        rnn(SEQ, MEM)


# ---------------------------------------------------------------- empty and padded inputs
def _run(make, sequences, memory, **kwargs):
    keras.utils.set_random_seed(0)
    rnn = AttentionRNN(make(), return_attention_scores=True, return_state=True)
    return [_np(x) for x in rnn(sequences, memory, **kwargs)]


@pytest.mark.parametrize("name", CELLS)
def test_empty_batch(name):
    out = _run(CELLS[name], np.ones((0, 3, 5), "float32"), np.ones((0, 4, 6), "float32"))
    assert out[0].shape[:2] == (0, 3) and out[1].shape == (0, 3, 4)
    assert all(state.shape[0] == 0 for state in out[2:])


@pytest.mark.parametrize("name", CELLS)
def test_no_steps_returns_the_initial_state(name):
    make = CELLS[name]
    rnn = AttentionRNN(make(), return_attention_scores=True, return_state=True)
    states = [np.full((2, size), 0.5, "float32") for size in rnn.cell.state_size]
    out = rnn(np.ones((2, 0, 5), "float32"), MEM, initial_state=states)
    assert tuple(out[0].shape) == (2, 0, rnn.cell.output_size)
    assert tuple(out[1].shape) == (2, 0, 4)
    for got, expected in zip(out[2:], states):
        np.testing.assert_array_equal(_np(got), expected)
    last = AttentionRNN(make(), return_sequences=False)(np.ones((2, 0, 5), "float32"), MEM)
    np.testing.assert_array_equal(_np(last), np.zeros((2, rnn.cell.output_size)))


@pytest.mark.parametrize("name", CELLS)
def test_no_memory_equals_an_all_padding_memory(name):
    rng = np.random.default_rng(0)
    sequences = rng.normal(size=(2, 3, 5)).astype("float32")
    memory = rng.normal(size=(2, 4, 6)).astype("float32")
    padded = _run(CELLS[name], sequences, memory, memory_mask=np.zeros((2, 4), bool))
    empty = _run(CELLS[name], sequences, memory[:, :0])
    assert empty[1].shape == (2, 3, 0)
    np.testing.assert_array_equal(padded[1], np.zeros((2, 3, 4)))
    for a, b in zip([padded[0], *padded[2:]], [empty[0], *empty[2:]]):
        np.testing.assert_allclose(b, a, atol=1e-6)
        assert np.all(np.isfinite(b))


@pytest.mark.parametrize("name", CELLS)
def test_nan_in_padding_is_ignored_exactly(name):
    rng = np.random.default_rng(1)
    sequences = rng.normal(size=(2, 3, 5)).astype("float32")
    memory = rng.normal(size=(2, 4, 6)).astype("float32")
    mask = np.array([[True, True, True], [True, True, False]])
    memory_mask = np.array([[True] * 4, [True, True, False, False]])
    clean = _run(
        CELLS[name],
        np.where(mask[..., None], sequences, 0.0).astype("float32"),
        np.where(memory_mask[..., None], memory, 0.0).astype("float32"),
        mask=mask,
        memory_mask=memory_mask,
    )
    dirty = _run(
        CELLS[name],
        np.where(mask[..., None], sequences, np.nan).astype("float32"),
        np.where(memory_mask[..., None], memory, np.nan).astype("float32"),
        mask=mask,
        memory_mask=memory_mask,
    )
    for a, b in zip(clean, dirty):
        np.testing.assert_array_equal(b, a)
        assert np.all(np.isfinite(b))


def test_nan_in_a_valid_decoder_step_propagates_to_later_steps_of_that_row():
    rng = np.random.default_rng(2)
    sequences = rng.normal(size=(2, 3, 5)).astype("float32")
    clean = _run(_luong, sequences, MEM)[0]
    sequences[0, 1] = np.nan
    dirty = _run(_luong, sequences, MEM)[0]
    np.testing.assert_array_equal(dirty[0, 0], clean[0, 0])
    assert np.all(np.isnan(dirty[0, 1:]))
    np.testing.assert_array_equal(dirty[1], clean[1])

"""The validation floor (`keras_attention._validation`, docs/design.md §1): one policy for
integers, numbers and flags, the same at every entry point (issue 14)."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from keras_attention import LuongAttention, LuongAttentionCell
from keras_attention import _validation as V
from keras_attention.decoding import make_step_fn
from keras_attention.metrics import TokenErrorRate

FLAGS = [True, False, np.bool_(True), np.bool_(False), 0, 1, np.int64(0), np.int32(1)]
NOT_FLAGS = [2, -1, np.int64(2), 0.0, 1.0, "yes", "True", None, [True]]
INTEGERS = [0, 3, np.int64(3), np.int32(0), np.uint8(7)]
NOT_INTEGERS = [True, False, np.bool_(True), 2.0, np.float32(2.0), "3", None]


@pytest.mark.parametrize("value", FLAGS, ids=repr)
def test_flags(value):
    result = V.check_flag("flag", value)
    assert type(result) is bool and result == bool(value)


@pytest.mark.parametrize("value", NOT_FLAGS, ids=repr)
def test_not_flags_name_the_argument_and_the_value(value):
    with pytest.raises(ValueError, match=r"`flag` must be True or False\. Received: flag="):
        V.check_flag("flag", value)


@pytest.mark.parametrize("value", INTEGERS, ids=repr)
def test_integers(value):
    result = V.check_int("n", value, minimum=0)
    assert type(result) is int and result == int(value)


@pytest.mark.parametrize("value", NOT_INTEGERS, ids=repr)
def test_not_integers(value):
    with pytest.raises(ValueError, match=r"`n` must be an integer\. Received: n="):
        V.check_int("n", value)


def test_integer_bounds_and_messages():
    assert V.check_int("n", None, minimum=1, allow_none=True) is None
    for minimum, kind in [(0, "a non-negative integer"), (1, "a positive integer"), (3, ">= 3")]:
        with pytest.raises(ValueError, match=rf"{kind}.*Received: n=-1"):
            V.check_int("n", -1, minimum=minimum)
    with pytest.raises(ValueError, match=r"positive integer or None\. Received: n=0"):
        V.check_int("n", 0, minimum=1, allow_none=True)


def test_numbers():
    assert V.check_finite("x", np.float32(0.5)) == 0.5 and V.check_finite("x", np.int64(2)) == 2.0
    assert V.check_rate("p", np.float64(0.25)) == 0.25
    assert V.check_probability("p", 1) == 1.0 and V.check_probability("p", None, True) is None
    for value in (True, np.bool_(False), float("nan"), float("inf"), "1"):
        with pytest.raises(ValueError, match="Received: x="):
            V.check_finite("x", value)
    with pytest.raises(ValueError, match=r"\[0, 1\)\. Received: p=1"):
        V.check_rate("p", 1)
    with pytest.raises(ValueError, match=r"None or a probability in \[0, 1\]\. Received: p=1\.5"):
        V.check_probability("p", 1.5, allow_none=True)


# One policy at the entry points of different floors (each used its own rule before).
@pytest.mark.parametrize("value", [np.bool_(True), 1, np.int64(0)], ids=repr)
def test_every_floor_takes_the_same_flags(value):
    assert LuongAttention(use_scale=value).use_scale is bool(value)  # layers
    cell = LuongAttentionCell(keras.layers.LSTMCell(4), LuongAttention(), input_feeding=value)
    assert cell.input_feeding is bool(value)  # cells
    from keras_attention.decoding import BeamSearch
    from keras_attention.models import Seq2Seq, Translator

    model = Seq2Seq(7, 7, units=4, embedding_dim=4, bidirectional=value)  # models
    assert model.encoder.bidirectional is bool(value)
    assert BeamSearch(2, return_beams=value).return_beams is bool(value)  # decoding
    with pytest.warns(DeprecationWarning):  # 0.2's keyword and mirror attribute
        assert Translator(model, sample=value, jit_compile=False).sample is bool(value)


@pytest.mark.parametrize("value", [2, "yes", None], ids=repr)
def test_every_floor_rejects_the_same_non_flags(value):
    from keras_attention.models import Seq2Seq

    for make, name in [
        (lambda: LuongAttention(use_scale=value), "use_scale"),
        (lambda: Seq2Seq(7, 7, units=4, bidirectional=value), "bidirectional"),
    ]:
        with pytest.raises(ValueError, match=f"`{name}` must be True or False. Received: {name}="):
            make()


def test_every_floor_takes_numpy_integers_and_rejects_bools():
    cell = LuongAttentionCell(keras.layers.LSTMCell(4), LuongAttention())
    memory = np.ones((2, 3, 4), "float32")
    assert make_step_fn(cell, keras.layers.Embedding(5, 4), keras.layers.Dense(5), memory,
                        beam_width=np.int64(2)).beam_width == 2  # fmt: skip
    assert TokenErrorRate(end_id=np.int64(3)).end_id == 3  # metrics took Python ints only
    with pytest.raises(ValueError, match="window_radius=True"):
        LuongAttention(alignment="local_monotonic", window_radius=True)
    with pytest.raises(ValueError, match="beam_width=True"):
        make_step_fn(cell, keras.layers.Embedding(5, 4), keras.layers.Dense(5), memory,
                     beam_width=True)  # fmt: skip


@pytest.mark.tensorflow_only
def test_text_takes_the_same_flags():
    from keras_attention.text import CharTokenizer, normalize_text

    tokenizer = CharTokenizer(vocabulary=["a", "b"], lowercase=np.bool_(True))
    assert tokenizer.lowercase is True
    assert tokenizer.tokenize(["ab"], add_start=1, add_end=np.int64(0)).shape[0] == 1
    assert normalize_text(["A"], lowercase=1).numpy().tolist() == [b"a"]
    with pytest.raises(ValueError, match="lowercase=2"):
        normalize_text(["A"], lowercase=2)


def test_cells_give_their_state_sizes_publicly():
    lstm = LuongAttentionCell(keras.layers.LSTMCell(4), LuongAttention())
    assert lstm.cell_state_sizes == [4, 4]
    stacked = keras.layers.StackedRNNCells([keras.layers.GRUCell(3), keras.layers.LSTMCell(5)])
    cell = LuongAttentionCell(stacked, LuongAttention())
    assert cell.cell_state_sizes == [3, 5, 5]
    assert cell.state_size[:3] == cell.cell_state_sizes

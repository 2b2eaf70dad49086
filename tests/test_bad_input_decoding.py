"""Bad input to `keras_attention.decoding`: a clear error or a documented result.

Extends tests/decoding/test_decoding.py::test_bad_arguments. `make_step_fn` records the beam
width, the memory's batch size and the embedding's vocabulary size on the step function, so
the searches reject a mismatched `beam_width`/`batch_size` or an out-of-vocabulary
`start_id` before anything runs. Documented results: an empty batch gives empty results,
a memory with no steps gives `[B, max_length, 0]` alignments, and NaN in padded memory
positions changes nothing.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import LuongAttention, LuongAttentionCell
from keras_attention.decoding import beam_search, greedy_search, make_step_fn

VOCAB, BATCH, SOURCE = 10, 2, 5


@pytest.fixture(scope="module")
def parts():
    keras.utils.set_random_seed(0)
    cell = LuongAttentionCell(keras.layers.LSTMCell(8), LuongAttention("general"))
    embedding, dense = keras.layers.Embedding(VOCAB, 4), keras.layers.Dense(VOCAB)
    memory = np.random.default_rng(0).normal(size=(BATCH, SOURCE, 6)).astype("float32")
    make_step_fn(cell, embedding, dense, memory)  # builds the cell
    return cell, embedding, dense, memory


def _greedy(parts, memory=None, mask=None, batch=BATCH, **kwargs):
    cell, embedding, dense, default = parts
    memory = default if memory is None else memory
    step_fn = make_step_fn(cell, embedding, dense, memory, mask)
    options = {"batch_size": batch, "start_id": 1, "end_id": 2, "max_length": 3}
    return greedy_search(step_fn, cell.get_initial_state(batch), **{**options, **kwargs})


def _beam(parts, memory=None, mask=None, batch=BATCH, width=2, **kwargs):
    cell, embedding, dense, default = parts
    memory = default if memory is None else memory
    step_fn = make_step_fn(cell, embedding, dense, memory, mask, beam_width=width)
    options = {"batch_size": batch, "start_id": 1, "end_id": 2, "max_length": 3}
    options["beam_width"] = width
    return beam_search(step_fn, cell.get_initial_state(batch), **{**options, **kwargs})


def _np(result):
    return {k: np.asarray(ops.convert_to_numpy(v)) for k, v in result.items()}


# ---------------------------------------------------------------- bad arguments
@pytest.mark.parametrize("search", [_greedy, _beam], ids=["greedy", "beam"])
@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"step_fn": None}, TypeError, "step_fn=None"),
        ({"batch_size": "a"}, ValueError, "batch_size='a'"),
        ({"batch_size": 2.0}, ValueError, r"batch_size=2\.0"),
        ({"batch_size": -1}, ValueError, "batch_size=-1"),
        ({"batch_size": True}, ValueError, "batch_size=True"),
        ({"batch_size": 3}, ValueError, r"\(2\).*batch_size=3"),
        ({"start_id": VOCAB}, ValueError, r"\[0, 10\).*start_id=10"),
        ({"start_id": None}, ValueError, "start_id=None"),
        ({"start_id": 1.0}, ValueError, r"start_id=1\.0"),
        ({"end_id": VOCAB + 5}, ValueError, "end_id=15"),
        ({"pad_id": -1}, ValueError, "pad_id=-1"),
        ({"max_length": None}, ValueError, "max_length=None"),
        ({"max_length": "3"}, ValueError, "max_length='3'"),
        ({"vocabulary_size": True}, ValueError, "vocabulary_size=True"),
    ],
)
def test_bad_search_argument(parts, search, kwargs, error, match):
    kwargs = dict(kwargs)
    if "step_fn" in kwargs:
        cell = parts[0]
        call = greedy_search if search is _greedy else beam_search
        extra = {} if search is _greedy else {"beam_width": 2}
        state = cell.get_initial_state(BATCH)
        with pytest.raises(error, match=match):
            call(None, state, BATCH, start_id=1, end_id=2, max_length=3, **extra)
        return
    with pytest.raises(error, match=match):
        search(parts, **kwargs)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"length_penalty": float("nan")}, "length_penalty=nan"),
        ({"length_penalty": float("inf")}, "length_penalty=inf"),
        ({"length_penalty": None}, "length_penalty=None"),
        ({"beam_width": 3}, r"beam_width=2\).*beam_width=3"),
    ],
)
def test_bad_beam_argument(parts, kwargs, match):
    with pytest.raises(ValueError, match=match):
        _beam(parts, **kwargs)


def test_greedy_on_a_step_fn_made_for_beams(parts):
    cell, embedding, dense, memory = parts
    step_fn = make_step_fn(cell, embedding, dense, memory, beam_width=3)
    with pytest.raises(ValueError, match=r"beam_width=3\).*beam_width=1"):
        greedy_search(step_fn, cell.get_initial_state(BATCH), BATCH, 1, 2, 3)


@pytest.mark.parametrize(
    "change, error, match",
    [
        ({"cell": None}, TypeError, "cell=None"),
        ({"cell": keras.layers.LSTMCell(3)}, TypeError, "cell=<LSTMCell"),
        ({"embedding": None}, TypeError, "embedding=None"),
        ({"output_layer": "dense"}, TypeError, "output_layer='dense'"),
        ({"memory": np.ones((2, 6), "float32")}, ValueError, r"memory.shape=\(2, 6\)"),
        ({"memory_mask": np.ones((2, 4), bool)}, ValueError, r"memory_mask.shape=\(2, 4\)"),
        ({"memory_mask": np.full((2, 5), "x")}, ValueError, r"memory_mask.dtype=.*(str|U1)"),
        ({"beam_width": "2"}, ValueError, "beam_width='2'"),
        ({"beam_width": 0}, ValueError, "beam_width=0"),
    ],
)
def test_bad_make_step_fn_argument(parts, change, error, match):
    cell, embedding, dense, memory = parts
    args = {"cell": cell, "embedding": embedding, "output_layer": dense, "memory": memory}
    with pytest.raises(error, match=match):
        make_step_fn(**{**args, **change})


# ---------------------------------------------------------------- empty and padded inputs
@pytest.mark.parametrize("search", [_greedy, _beam], ids=["greedy", "beam"])
def test_empty_batch(parts, search):
    result = _np(search(parts, memory=parts[3][:0], batch=0))
    assert result["ids"].shape == (0, 3) and result["scores"].shape == (0,)
    assert result["alignments"].shape == (0, 3, SOURCE)


@pytest.mark.parametrize("search", [_greedy, _beam], ids=["greedy", "beam"])
def test_no_memory_steps_equals_an_all_padding_memory(parts, search):
    empty = _np(search(parts, memory=parts[3][:, :0]))
    padded = _np(search(parts, mask=np.zeros((BATCH, SOURCE), bool)))
    assert empty["alignments"].shape == (BATCH, 3, 0)
    np.testing.assert_array_equal(padded["alignments"], 0.0)
    np.testing.assert_array_equal(empty["ids"], padded["ids"])
    np.testing.assert_allclose(empty["scores"], padded["scores"], atol=1e-5)
    assert np.all(np.isfinite(empty["scores"]))


@pytest.mark.parametrize("search", [_greedy, _beam], ids=["greedy", "beam"])
def test_nan_in_padded_memory_changes_nothing(parts, search):
    memory = parts[3]
    mask = np.array([[True] * SOURCE, [True, True, False, False, False]])
    clean = _np(search(parts, memory=np.where(mask[..., None], memory, 0.0), mask=mask))
    dirty_memory = np.where(mask[..., None], memory, np.nan).astype("float32")
    dirty = _np(search(parts, memory=dirty_memory, mask=mask))
    for key in clean:
        np.testing.assert_array_equal(dirty[key], clean[key])
        assert np.all(np.isfinite(dirty[key]))

"""The searches complete a wrapped-cell-only initial state (an encoder's `[h, c]`, as tfa's
`AttentionWrapperState.clone(cell_state=...)` took it); a hand-driven step names the fix."""

from __future__ import annotations

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import LuongAttention, LuongAttentionCell, LuongMonotonicAttention
from keras_attention.decoding import (
    StepFunction,
    beam_search,
    greedy_search,
    make_step_fn,
    sample_search,
)
from tests.backend_utils import to_numpy

B, S, D, V = 2, 5, 6, 9


def _decoder(attention):
    keras.utils.set_random_seed(3)
    cell = LuongAttentionCell(keras.layers.LSTMCell(D), attention, attention_units=4)
    embedding, dense = keras.layers.Embedding(V, 3), keras.layers.Dense(V)
    rng = np.random.default_rng(0)
    memory = rng.normal(size=(B, S, D)).astype("float32")
    encoder_state = [rng.normal(size=(B, D)).astype("float32") for _ in range(2)]
    return cell, embedding, dense, memory, encoder_state


@pytest.mark.parametrize(
    "attention",
    [lambda: LuongAttention("general"), lambda: LuongMonotonicAttention(score_bias_init=1.0)],
    ids=["global", "monotonic"],
)
def test_searches_from_the_encoder_state_equal_the_completed_state(attention):
    cell, embedding, dense, memory, encoder_state = _decoder(attention())
    full = None
    for beam_width in (1, 2):
        step_fn = make_step_fn(cell, embedding, dense, memory, beam_width=beam_width)
        if full is None:  # after make_step_fn built the cell
            full = cell.complete_initial_state(encoder_state, B, memory)
            assert len(full) > len(encoder_state)
        args = dict(batch_size=B, start_id=1, end_id=2, max_length=4)
        if beam_width == 1:
            short, long = (greedy_search(step_fn, s, **args) for s in (encoder_state, full))
        else:
            short, long = (
                beam_search(step_fn, s, beam_width=2, **args) for s in (encoder_state, full)
            )
        for key in long:
            np.testing.assert_array_equal(to_numpy(short[key]), to_numpy(long[key]), err_msg=key)
    step_fn = make_step_fn(cell, embedding, dense, memory)
    short, long = (
        sample_search(step_fn, s, B, 1, 2, max_length=4, seed=7) for s in (encoder_state, full)
    )
    np.testing.assert_array_equal(to_numpy(short["ids"]), to_numpy(long["ids"]))


def test_a_short_state_stepped_by_hand_is_a_clear_error():
    cell, embedding, dense, memory, encoder_state = _decoder(LuongAttention())
    step_fn = make_step_fn(cell, embedding, dense, memory)
    with pytest.raises(ValueError, match=r"complete_initial_state.*Received: a list of 2"):
        step_fn(ops.ones((B,), "int32"), encoder_state, 0)


def test_complete_state_is_checked_and_kept_by_never_generating():
    with pytest.raises(TypeError, match="Received: complete_state=3"):
        StepFunction(lambda tokens, state, t: None, complete_state=3)
    cell, embedding, dense, memory, _ = _decoder(LuongAttention())
    step_fn = make_step_fn(cell, embedding, dense, memory)
    assert step_fn.never_generating([0]).complete_state is step_fn.complete_state


def test_memory_tiled_by_hand_with_beam_width_one_names_the_fix():
    cell, embedding, dense, memory, encoder_state = _decoder(LuongAttention())
    step_fn = make_step_fn(cell, embedding, dense, np.repeat(memory, 2, axis=0))
    with pytest.raises(ValueError, match="tile_batch"):
        beam_search(step_fn, encoder_state, B, 1, 2, max_length=3, beam_width=2)

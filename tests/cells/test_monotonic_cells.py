"""Monotonic and location-sensitive attention inside the cells, AttentionRNN and the searches.

The previous alignment `[B, S]` travels in the cell's state list (after the sized states):
`AttentionRNN` over both cells against the float64 decoders of `tests/reference_monotonic.py`
(memory and decoder padding), stepping by hand, initial states, beam search reordering the
alignment state with its beams, and XLA.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import (
    AdditiveAttention,
    AttentionRNN,
    BahdanauAttentionCell,
    BahdanauMonotonicAttention,
    LocationSensitiveAttention,
    LuongAttentionCell,
    LuongMonotonicAttention,
)
from keras_attention.decoding import beam_search, greedy_search, make_step_fn
from tests import reference_cells
from tests import reference_monotonic as ref
from tests.backend_utils import BACKEND, jit, to_numpy
from tests.conftest import layer_weights

TOL = {"rtol": 1e-5, "atol": 1e-5}
B, T, S, D_Y, D_H, UNITS = 3, 4, 6, 3, 5, 5


def _data(seed):
    rng = np.random.default_rng(seed)
    y = rng.normal(size=(B, T, D_Y)).astype("float32")
    memory = rng.normal(size=(B, S, D_H)).astype("float32")
    mask = np.arange(S)[None, :] < np.array([S, 4, 2])[:, None]
    memory[~mask] = 50.0
    target_mask = np.array([[1, 1, 1, 1], [1, 1, 0, 1], [1, 1, 1, 0]], bool)
    return rng, y, memory, mask, target_mask


def _randomize(layer, rng):
    for w in layer.weights:
        if w.name == "score_bias":
            w.assign(np.float32(rng.uniform(0.0, 1.0)))
        else:
            w.assign((0.4 * rng.normal(size=w.shape)).astype("float32"))


CASES = {
    "luong-lstm-luong-monotonic-parallel": (
        "luong", keras.layers.LSTMCell, reference_cells.lstm_cell,
        lambda: LuongMonotonicAttention(mode="parallel"), "general", "parallel"),
    "luong-gru-bahdanau-monotonic-recursive": (
        "luong", keras.layers.GRUCell, reference_cells.gru_cell,
        lambda: BahdanauMonotonicAttention(4, normalize=True, mode="recursive"),
        "additive", "recursive"),
    "bahdanau-gru-bahdanau-monotonic-hard": (
        "bahdanau", keras.layers.GRUCell, reference_cells.gru_cell,
        lambda: BahdanauMonotonicAttention(4, mode="hard"), "additive", "hard"),
    "bahdanau-lstm-location-cumulative": (
        "bahdanau", keras.layers.LSTMCell, reference_cells.lstm_cell,
        lambda: LocationSensitiveAttention(4, filters=2, kernel_size=3, cumulative=True),
        "location", None),
    "luong-lstm-location": (
        "luong", keras.layers.LSTMCell, reference_cells.lstm_cell,
        lambda: LocationSensitiveAttention(4, filters=2, kernel_size=3), "location", None),
}  # fmt: skip


def _cell(kind, cell_cls, attention):
    if kind == "luong":
        return LuongAttentionCell(cell_cls(UNITS), attention)
    return BahdanauAttentionCell(cell_cls(UNITS), attention)


@pytest.mark.parametrize("name", sorted(CASES))
def test_attention_rnn_matches_reference(name):
    kind, cell_cls, cell_fn, make, family, mode = CASES[name]
    rng, y, memory, mask, target_mask = _data(sorted(CASES).index(name))
    attention = make()
    cell = _cell(kind, cell_cls, attention)
    rnn = AttentionRNN(cell, return_attention_scores=True, return_state=True)
    rnn.build(y.shape, memory.shape)
    _randomize(attention, rng)
    cell_weights = {w.name: to_numpy(w).astype(np.float64) for w in cell.cell.weights}
    for w in cell.cell.weights:  # away from the initializer (zeros biases)
        w.assign((0.4 * rng.normal(size=w.shape)).astype("float32"))
        cell_weights[w.name] = to_numpy(w).astype(np.float64)
    outputs, alignments, *states = rnn(y, memory, memory_mask=mask, mask=target_mask)
    weights = layer_weights(attention)
    if family == "location":
        attend = ref.location_attend(weights, cumulative=attention.cumulative)
        initial = [np.zeros((B, S))] * attention.state_count
    else:
        score = {"normalize": getattr(attention, "normalize", False)}
        attend = ref.monotonic_attend(family, mode, weights, **score)
        initial = [ref.first_alignment(B, S)]
    kernel = to_numpy(cell.attention_kernel) if kind == "luong" else None
    expected, expected_alignments, final = ref.decoder(
        kind, y, memory, mask, cell_fn, cell_weights, attend, initial, kernel, target_mask
    )
    np.testing.assert_allclose(to_numpy(alignments), expected_alignments, **TOL)
    np.testing.assert_allclose(to_numpy(outputs), expected, **TOL)
    count = attention.state_count
    assert len(states) == len(cell.state_size) and cell.state_size[-count:] == [None] * count
    for got, want in zip(states[-count:], final):
        np.testing.assert_allclose(to_numpy(got), want, **TOL)
    assert np.all(to_numpy(alignments)[np.broadcast_to(~mask[:, None], (B, T, S))] == 0.0)

    # Stepping by hand from get_initial_state(B, memory) gives the same outputs.
    prepared = cell.prepare_memory(memory, mask)
    step_states = cell.get_initial_state(B, memory)
    for t in range(2):
        out, step_states, alignment = cell.step(y[:, t], step_states, prepared, position=t)
        np.testing.assert_allclose(to_numpy(out), expected[:, t], **TOL)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "jit"])
def test_training_noise_is_drawn_before_the_loop(compiled):
    """In training, `AttentionRNN` draws the noise of every step at once, before its time loop
    (`σ · normal([T, B, S])`, the layer's generator's first draw), so that the loop carries no
    random state (a JAX loop would leak the generator's traced update); the decoder equals the
    float64 reference fed that noise, compiled or not."""
    if compiled and BACKEND == "torch":
        pytest.skip("torch.compile of the loop takes 15-40 s on CPU; the eager case covers PyTorch")
    rng, y, memory, mask, target_mask = _data(7)
    sigma, seed = 1.5, 11
    attention = LuongMonotonicAttention(mode="parallel", sigmoid_noise=sigma, seed=seed)
    cell = _cell("luong", keras.layers.LSTMCell, attention)
    rnn = AttentionRNN(cell, return_attention_scores=True)
    rnn.build(y.shape, memory.shape)
    _randomize(attention, rng)
    for w in cell.cell.weights:
        w.assign((0.4 * rng.normal(size=w.shape)).astype("float32"))
    cell_weights = {w.name: to_numpy(w).astype(np.float64) for w in cell.cell.weights}

    def run(y, memory, mask, target_mask):
        # The draw to expect, in the same function (XLA may pick another random algorithm):
        # a fresh generator's first seed is the integer seed's.
        noises = sigma * keras.random.normal((T, B, S), seed=seed)
        return (*rnn(y, memory, memory_mask=mask, mask=target_mask, training=True), noises)

    outputs, alignments, noises = (jit(run) if compiled else run)(y, memory, mask, target_mask)
    noises = to_numpy(noises)
    attend = ref.monotonic_attend("general", "parallel", layer_weights(attention), noises)
    expected, expected_alignments, _ = ref.decoder(
        "luong", y, memory, mask, reference_cells.lstm_cell, cell_weights, attend,
        [ref.first_alignment(B, S)], to_numpy(cell.attention_kernel), target_mask,
    )  # fmt: skip
    np.testing.assert_allclose(to_numpy(alignments), expected_alignments, **TOL)
    np.testing.assert_allclose(to_numpy(outputs), expected, **TOL)
    quiet = ref.monotonic_attend("general", "parallel", layer_weights(attention))
    without, _, _ = ref.decoder(
        "luong", y, memory, mask, reference_cells.lstm_cell, cell_weights, quiet,
        [ref.first_alignment(B, S)], to_numpy(cell.attention_kernel), target_mask,
    )  # fmt: skip
    assert np.abs(expected - without).max() > 1e-2  # the noise matters here


def test_initial_state_needs_the_memory_and_accepts_a_full_state():
    cell = LuongAttentionCell(keras.layers.GRUCell(4), LuongMonotonicAttention())
    with pytest.raises(ValueError, match="memory=None"):
        cell.get_initial_state(2)
    memory = np.ones((2, 5, 4), "float32")
    states = cell.get_initial_state(2, memory)
    assert [tuple(s.shape) for s in states] == [(2, 4), (2, 4), (2, 5)]
    np.testing.assert_array_equal(to_numpy(states[-1]), np.eye(5)[[0, 0]])
    completed = cell.complete_initial_state([np.ones((2, 4), "float32")], 2, memory)
    assert len(completed) == 3
    with pytest.raises(ValueError, match=r"initial_state\[2\].*memory_steps"):
        cell.complete_initial_state(states[:2] + [np.ones((2, 5, 1))], 2, memory)
    rnn = AttentionRNN(cell)
    started = np.zeros((2, 5), "float32")
    started[:, 3] = 1.0  # start the reader at position 3: nothing before it gets weight
    rnn_scores = AttentionRNN(cell, return_attention_scores=True)
    _, alignments = rnn_scores(
        np.ones((2, 3, 2), "float32"), memory, initial_state=states[:2] + [started]
    )
    assert np.all(to_numpy(alignments)[..., :3] == 0.0)
    assert tuple(rnn(np.ones((2, 3, 2), "float32"), memory).shape) == (2, 3, 4)


def test_several_attentions_with_one_monotonic():
    cell = LuongAttentionCell(
        keras.layers.LSTMCell(4),
        [AdditiveAttention(3), LocationSensitiveAttention(3, filters=2, kernel_size=3,
                                                          cumulative=True)],
        attention_units=[2, 3],
    )  # fmt: skip
    rnn = AttentionRNN(cell, return_state=True)
    outputs, *states = rnn(np.ones((2, 3, 2), "float32"), np.ones((2, 5, 4), "float32"))
    assert tuple(outputs.shape) == (2, 3, 5)
    assert [tuple(s.shape) for s in states] == [(2, 4), (2, 4), (2, 5), (2, 5), (2, 5)]
    np.testing.assert_allclose(to_numpy(states[-1]).sum(-1), 3.0, atol=1e-5)  # Σ_t Σ_i α


# ---------------------------------------------------------------- searches
VOCAB = 7


def _decoder(attention):
    keras.utils.set_random_seed(1)
    cell = BahdanauAttentionCell(keras.layers.GRUCell(6), attention)
    embedding = keras.layers.Embedding(VOCAB, 3)
    projection = keras.layers.Dense(VOCAB)
    return cell, embedding, projection


def _teacher_forced(cell, embedding, projection, memory, ids, lengths):
    """Log-probabilities of `ids` (after the start token 1, up to their lengths) and the
    alignments under the teacher-forced decoder (zero after the end)."""
    inputs = np.concatenate([np.ones((ids.shape[0], 1), "int32"), ids[:, :-1]], axis=1)
    rnn = AttentionRNN(cell, return_attention_scores=True)
    outputs, alignments = rnn(embedding(inputs), memory)
    log_probs = to_numpy(ops.log_softmax(projection(outputs), axis=-1))
    picked = np.take_along_axis(log_probs, ids[..., None], axis=-1)[..., 0]
    inside = np.arange(ids.shape[1])[None, :] < lengths[:, None]
    return (picked * inside).sum(-1), to_numpy(alignments) * inside[..., None]


@pytest.mark.parametrize(
    "make",
    [lambda: BahdanauMonotonicAttention(4, score_bias_init=1.0),
     lambda: LocationSensitiveAttention(4, filters=2, kernel_size=3, cumulative=True)],
    ids=["monotonic", "location"],
)  # fmt: skip
def test_greedy_and_beam_search_carry_the_alignment(make):
    cell, embedding, projection = _decoder(make())
    memory = np.random.default_rng(0).normal(size=(2, 5, 4)).astype("float32")
    common = {"batch_size": 2, "start_id": 1, "end_id": 2, "max_length": 5}
    step_fn = make_step_fn(cell, embedding, projection, memory)
    greedy = greedy_search(step_fn, cell.get_initial_state(2, memory), **common)
    beam_fn = make_step_fn(cell, embedding, projection, memory, beam_width=3)
    beam = beam_search(
        beam_fn, cell.get_initial_state(2, memory), beam_width=3, length_penalty=0.0, **common
    )
    # Every best hypothesis' score and alignments are those of teacher forcing it: the
    # alignment state was reordered with its beam (a wrong parent gives other numbers).
    for result in (greedy, beam):
        ids = to_numpy(result["ids"]).astype("int32")
        lengths = to_numpy(result["lengths"])
        scores, alignments = _teacher_forced(cell, embedding, projection, memory, ids, lengths)
        np.testing.assert_allclose(to_numpy(result["scores"]), scores, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(to_numpy(result["alignments"]), alignments, atol=1e-5)
    # The beam search found at least the greedy score (length_penalty=0, exact scores).
    assert np.all(to_numpy(beam["scores"]) >= to_numpy(greedy["scores"]) - 1e-5)


@pytest.mark.slow
def test_jit_compiled_steps_match_eager():
    cell, embedding, projection = _decoder(LuongMonotonicAttention(mode="parallel"))
    memory = np.random.default_rng(1).normal(size=(2, 5, 6)).astype("float32")
    step_fn = make_step_fn(cell, embedding, projection, memory)
    common = {"batch_size": 2, "start_id": 1, "end_id": 0, "max_length": 4}
    eager = greedy_search(step_fn, cell.get_initial_state(2, memory), **common)
    compiled = jit(lambda: greedy_search(step_fn, cell.get_initial_state(2, memory), **common))()
    np.testing.assert_array_equal(to_numpy(compiled["ids"]), to_numpy(eager["ids"]))
    np.testing.assert_allclose(
        to_numpy(compiled["alignments"]), to_numpy(eager["alignments"]), atol=1e-5
    )


@pytest.mark.slow
@pytest.mark.skipif(BACKEND == "torch", reason="torch.compile of fit takes minutes on CPU")
def test_xla_fit():
    # (Compiled inference: test_jit_compiled_steps_match_eager.) One compiled model for both
    # kinds, compiling costs tens of seconds: noisy monotonic attention (the
    # noise drawn inside the XLA while loop) next to cumulative location-sensitive attention.
    source = keras.Input((None,), dtype="int32")
    target = keras.Input((None,), dtype="int32")
    memory = keras.layers.Embedding(VOCAB, 4, mask_zero=True)(source)
    y = keras.layers.Embedding(VOCAB, 3, mask_zero=True)(target)
    attentions = [
        BahdanauMonotonicAttention(4, sigmoid_noise=1.0, mode="parallel", seed=0),
        LocationSensitiveAttention(4, filters=2, kernel_size=3, cumulative=True),
    ]
    cell = LuongAttentionCell(keras.layers.LSTMCell(6), attentions, attention_units=[3, 3])
    outputs = AttentionRNN(cell)(y, memory)
    logits = keras.layers.Dense(VOCAB)(outputs)
    model = keras.Model([source, target], logits)
    rng = np.random.default_rng(0)
    src = rng.integers(1, VOCAB, size=(8, 6))
    src[:3, 4:] = 0
    tgt = rng.integers(1, VOCAB, size=(8, 5))
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=True)  # fmt: skip
    history = model.fit([src, tgt], tgt, epochs=2, batch_size=4, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))

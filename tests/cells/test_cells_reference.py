"""Attentional cells and AttentionRNN against the float64 decoders of tests/reference_cells.py.

Covers docs/design.md §2 "Recurrent cells": Luong (input feeding on/off, tanh/no activation, every
score mode and alignment, additive) and Bahdanau (additive, Luong general) decoders over LSTMCell,
GRUCell and StackedRNNCells, with memory padding full of garbage, decoder padding (also a hole),
encoder initial states (and a full Luong state with h̃_0), `return_sequences=False`; stepping by
hand equals the sequence layer; Luong without input feeding equals LSTM + parallel
LuongAttention; gradients reach the encoder and match finite differences; fully masked memory
rows give zero contexts and no NaN.
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
    LuongAttention,
    LuongAttentionCell,
)
from tests import reference_cells as ref
from tests.backend_utils import BACKEND, enable_float64, jit, to_numpy, value_and_grad, variable
from tests.conftest import layer_weights, randomize_weights

TOL = {"rtol": 1e-5, "atol": 1e-5}

BATCH, STEPS, MEMORY, D_Y, UNITS = 3, 5, 7, 3, 6

CELLS = {
    "lstm": (keras.layers.LSTMCell, ref.lstm_cell),
    "gru": (keras.layers.GRUCell, ref.gru_cell),
}


def _attention_ref(cls, kwargs):
    """tests.reference.attention keyword arguments (less the weights) for a layer's kwargs."""
    if cls is AdditiveAttention:
        out = {"mode": "additive"}
    else:
        out = {
            "mode": kwargs.get("score_mode", "dot"),
            "alignment": kwargs.get("alignment", "global"),
        }
        if "window_radius" in kwargs:
            out["window_radius"] = kwargs["window_radius"]
    for flag in ("normalize", "use_scale"):
        if kwargs.get(flag):
            out[flag] = True
    return out


def _data(rng, d_memory, memory_mask=None, target_mask=True, garbage=50.0):
    """Decoder inputs, memory with garbage padding, memory mask and decoder mask."""
    y = rng.normal(size=(BATCH, STEPS, D_Y)).astype("float32")
    memory = rng.normal(size=(BATCH, MEMORY, d_memory)).astype("float32")
    if memory_mask is None:
        lengths = np.array([MEMORY, 4, 2])  # row 2 is shorter than the decoder (local_m clips)
        memory_mask = np.arange(MEMORY)[None, :] < lengths[:, None]
    memory[~memory_mask] = garbage * rng.normal(size=memory[~memory_mask].shape)
    tmask = None
    if target_mask:
        tmask = np.array(
            [
                [True] * STEPS,
                [True, True, True, False, False],  # padded from the middle to the end
                [True, True, False, True, False],  # a hole: the state must be carried over it
            ]
        )
    return y, memory, memory_mask, tmask


def _encoder_state(rng, kind):
    h = np.tanh(rng.normal(size=(BATCH, UNITS))).astype("float32")
    if kind == "lstm":
        return [h, rng.normal(size=(BATCH, UNITS)).astype("float32")]
    return [h]


def _build(rnn, y, memory, mask):
    rnn(y, memory, memory_mask=mask)  # builds every sub-layer
    return rnn


def _run(rnn, y, memory, mask, tmask=None, initial_state=None):
    outputs, alignments, *states = rnn(
        y, memory, memory_mask=mask, initial_state=initial_state, mask=tmask
    )
    return to_numpy(outputs), to_numpy(alignments), [to_numpy(s) for s in states]


def _assert_match(got, want):
    outputs, alignments, states = got
    ref_outputs, ref_alignments, ref_states = want
    np.testing.assert_allclose(alignments, ref_alignments, **TOL)
    np.testing.assert_allclose(outputs, ref_outputs, **TOL)
    assert len(states) == len(ref_states)
    for state, ref_state in zip(states, ref_states):
        np.testing.assert_allclose(state, ref_state, **TOL)


# (id, cell kind, attention class, attention kwargs, input_feeding, activation, encoder state)
LUONG_CASES = [
    ("lstm-dot-global-feed", "lstm", LuongAttention, {"score_mode": "dot"}, True, "tanh", False),
    (
        "lstm-general-localm-nofeed-linear-init",
        "lstm",
        LuongAttention,
        {"score_mode": "general", "alignment": "local_monotonic", "window_radius": 1},
        False,
        None,
        True,
    ),
    (
        "gru-concat-localp-feed-init",
        "gru",
        LuongAttention,
        {
            "score_mode": "concat",
            "alignment": "local_predictive",
            "window_radius": 2,
            "score_units": 4,
        },
        True,
        "tanh",
        True,
    ),
    (
        "gru-general-global-scale-nofeed",
        "gru",
        LuongAttention,
        {"score_mode": "general", "use_scale": True},
        False,
        "tanh",
        False,
    ),
    (
        "lstm-concat-global-feed-linear-init",
        "lstm",
        LuongAttention,
        {"score_mode": "concat", "score_units": 5},
        True,
        None,
        True,
    ),
    (
        "lstm-dot-localp-nofeed",
        "lstm",
        LuongAttention,
        {"score_mode": "dot", "alignment": "local_predictive", "window_radius": 2},
        False,
        "tanh",
        False,
    ),
    (
        "gru-dot-localm-feed-linear",
        "gru",
        LuongAttention,
        {"score_mode": "dot", "alignment": "local_monotonic", "window_radius": 1},
        True,
        None,
        False,
    ),
    (
        "lstm-additive-normalize-feed-init",
        "lstm",
        AdditiveAttention,
        {"score_units": 4, "normalize": True, "use_scale": True},
        True,
        "tanh",
        True,
    ),
]


@pytest.mark.parametrize(
    "seed, case", list(enumerate(c[1:] for c in LUONG_CASES)), ids=[c[0] for c in LUONG_CASES]
)
def test_luong_decoder_matches_reference(seed, case):
    kind, cls, kwargs, input_feeding, activation, with_init = case
    rng = np.random.default_rng(seed)
    d_memory = UNITS if kwargs.get("score_mode") == "dot" else 5
    y, memory, mask, tmask = _data(rng, d_memory)
    cell = LuongAttentionCell(
        CELLS[kind][0](UNITS),
        cls(**kwargs),
        attention_units=4,
        input_feeding=input_feeding,
        attention_activation=activation,
    )
    rnn = _build(
        AttentionRNN(cell, return_attention_scores=True, return_state=True), y, memory, mask
    )
    randomize_weights(rnn, rng)
    init = _encoder_state(rng, kind) if with_init else None
    got = _run(rnn, y, memory, mask, tmask, init)
    want = ref.luong_decoder(
        y,
        memory,
        mask,
        CELLS[kind][1],
        layer_weights(cell.cell),
        {**_attention_ref(cls, kwargs), "weights": layer_weights(cell.attention)},
        to_numpy(cell.attention_kernel),
        input_feeding=input_feeding,
        activation=activation,
        target_mask=tmask,
        initial_state=init,
    )
    _assert_match(got, want)
    # Padding gets exactly zero weight, padded decoder steps exactly zero output.
    assert np.all(got[1][np.broadcast_to(~mask[:, None, :], got[1].shape)] == 0.0)
    assert np.all(got[0][~tmask] == 0.0) and np.all(got[1][~tmask] == 0.0)


# (id, cell kind, attention class, attention kwargs, encoder state)
BAHDANAU_CASES = [
    ("gru-additive", "gru", AdditiveAttention, {"score_units": 5}, False),
    (
        "lstm-additive-normalize-scale-init",
        "lstm",
        AdditiveAttention,
        {"score_units": 5, "normalize": True, "use_scale": True},
        True,
    ),
    ("gru-luong-general-init", "gru", LuongAttention, {"score_mode": "general"}, True),
    (
        "lstm-luong-general-localm",
        "lstm",
        LuongAttention,
        {"score_mode": "general", "alignment": "local_monotonic", "window_radius": 1},
        False,
    ),
]


@pytest.mark.parametrize(
    "seed, case",
    list(enumerate((c[1:] for c in BAHDANAU_CASES), start=100)),
    ids=[c[0] for c in BAHDANAU_CASES],
)
def test_bahdanau_decoder_matches_reference(seed, case):
    kind, cls, kwargs, with_init = case
    rng = np.random.default_rng(seed)
    y, memory, mask, tmask = _data(rng, 5)
    cell = BahdanauAttentionCell(CELLS[kind][0](UNITS), cls(**kwargs))
    rnn = _build(
        AttentionRNN(cell, return_attention_scores=True, return_state=True), y, memory, mask
    )
    randomize_weights(rnn, rng)
    init = _encoder_state(rng, kind) if with_init else None
    got = _run(rnn, y, memory, mask, tmask, init)
    want = ref.bahdanau_decoder(
        y,
        memory,
        mask,
        CELLS[kind][1],
        layer_weights(cell.cell),
        {**_attention_ref(cls, kwargs), "weights": layer_weights(cell.attention)},
        target_mask=tmask,
        initial_state=init,
    )
    _assert_match(got, want)
    assert np.all(got[0][~tmask] == 0.0) and np.all(got[1][~tmask] == 0.0)


@pytest.mark.parametrize("input_feeding", [True, False])
def test_luong_decoder_without_masks_matches_reference(input_feeding):
    """No memory mask and no decoder mask at all (the `None` paths)."""
    rng = np.random.default_rng(5)
    y, memory, _, _ = _data(rng, 5, memory_mask=np.ones((BATCH, MEMORY), bool), target_mask=False)
    cell = LuongAttentionCell(
        keras.layers.LSTMCell(UNITS), LuongAttention("concat"), input_feeding=input_feeding
    )
    rnn = _build(
        AttentionRNN(cell, return_attention_scores=True, return_state=True), y, memory, None
    )
    randomize_weights(rnn, rng)
    got = _run(rnn, y, memory, None)
    want = ref.luong_decoder(
        y,
        memory,
        None,
        ref.lstm_cell,
        layer_weights(cell.cell),
        {"mode": "concat", "weights": layer_weights(cell.attention)},
        to_numpy(cell.attention_kernel),
        input_feeding=input_feeding,
    )
    _assert_match(got, want)


@pytest.mark.parametrize("kind", ["luong", "bahdanau"])
def test_return_sequences_false_is_the_last_valid_step(kind):
    rng = np.random.default_rng(9)
    y, memory, mask, tmask = _data(rng, 5)
    attention = LuongAttention("general", "local_monotonic", window_radius=1)
    if kind == "luong":
        cell = LuongAttentionCell(keras.layers.GRUCell(UNITS), attention, attention_units=4)
    else:
        cell = BahdanauAttentionCell(keras.layers.GRUCell(UNITS), attention)
    rnn = _build(AttentionRNN(cell, return_sequences=False), y, memory, mask)
    randomize_weights(rnn, rng)
    last = to_numpy(rnn(y, memory, memory_mask=mask, mask=tmask))
    common = {
        "cell_fn": ref.gru_cell,
        "cell_weights": layer_weights(cell.cell),
        "attention": {
            "mode": "general",
            "alignment": "local_monotonic",
            "window_radius": 1,
            "weights": layer_weights(attention),
        },
        "target_mask": tmask,
    }
    if kind == "luong":
        outputs, _, _ = ref.luong_decoder(
            y, memory, mask, attention_kernel=to_numpy(cell.attention_kernel), **common
        )
    else:
        outputs, _, _ = ref.bahdanau_decoder(y, memory, mask, **common)
    last_valid = [STEPS - 1 - int(np.argmax(row[::-1])) for row in tmask]  # 4, 2, 3
    np.testing.assert_allclose(last, outputs[np.arange(BATCH), last_valid], **TOL)


@pytest.mark.parametrize("kind", ["luong", "bahdanau"])
def test_stacked_cells_match_reference(kind):
    """StackedRNNCells: flat state [gru h, lstm h, lstm c]; Bahdanau's query is the top h."""
    rng = np.random.default_rng(13)
    y, memory, mask, tmask = _data(rng, 5)
    stacked = keras.layers.StackedRNNCells([keras.layers.GRUCell(4), keras.layers.LSTMCell(UNITS)])
    attention = AdditiveAttention(score_units=5)
    if kind == "luong":
        cell = LuongAttentionCell(stacked, attention)
    else:
        cell = BahdanauAttentionCell(stacked, attention)
    rnn = _build(
        AttentionRNN(cell, return_attention_scores=True, return_state=True), y, memory, mask
    )
    randomize_weights(rnn, rng)
    init = [np.tanh(rng.normal(size=(BATCH, n))).astype("float32") for n in (4, UNITS, UNITS)]
    got = _run(rnn, y, memory, mask, tmask, init)
    common = {
        "cell_fn": ref.stacked_cell(ref.gru_cell, ref.lstm_cell),
        "cell_weights": [layer_weights(c) for c in stacked.cells],
        "attention": {"mode": "additive", "weights": layer_weights(attention)},
        "target_mask": tmask,
        "initial_state": init,
    }
    if kind == "luong":
        want = ref.luong_decoder(
            y, memory, mask, attention_kernel=to_numpy(cell.attention_kernel), **common
        )
    else:
        want = ref.bahdanau_decoder(y, memory, mask, **common)
    _assert_match(got, want)


def test_luong_full_initial_state_feeds_h_tilde_0():
    """`initial_state` may be the full state list: the cell's states, then h̃_0."""
    rng = np.random.default_rng(17)
    y, memory, mask, tmask = _data(rng, 5)
    cell = LuongAttentionCell(
        keras.layers.LSTMCell(UNITS), LuongAttention("general"), attention_units=4
    )
    rnn = _build(
        AttentionRNN(cell, return_attention_scores=True, return_state=True), y, memory, mask
    )
    randomize_weights(rnn, rng)
    init = _encoder_state(rng, "lstm") + [np.tanh(rng.normal(size=(BATCH, 4))).astype("float32")]
    got = _run(rnn, y, memory, mask, tmask, init)
    want = ref.luong_decoder(
        y,
        memory,
        mask,
        ref.lstm_cell,
        layer_weights(cell.cell),
        {"mode": "general", "weights": layer_weights(cell.attention)},
        to_numpy(cell.attention_kernel),
        target_mask=tmask,
        initial_state=init,
    )
    _assert_match(got, want)


# ------------------------------------------------------------------ step by step == sequence
STEP_CASES = {
    "luong-lstm-feed-localm": lambda: LuongAttentionCell(
        keras.layers.LSTMCell(UNITS),
        LuongAttention("general", "local_monotonic", window_radius=1),
    ),
    "luong-gru-nofeed-localp": lambda: LuongAttentionCell(
        keras.layers.GRUCell(UNITS),
        LuongAttention("concat", "local_predictive", window_radius=2),
        input_feeding=False,
    ),
    "bahdanau-gru-additive": lambda: BahdanauAttentionCell(
        keras.layers.GRUCell(UNITS), AdditiveAttention(score_units=5)
    ),
    "bahdanau-lstm-general": lambda: BahdanauAttentionCell(
        keras.layers.LSTMCell(UNITS), LuongAttention("general")
    ),
}


@pytest.mark.parametrize("name", list(STEP_CASES))
def test_stepping_by_hand_equals_attention_rnn(name):
    rng = np.random.default_rng(11)
    y, memory, mask, _ = _data(rng, 5, target_mask=False)
    cell = STEP_CASES[name]()
    rnn = _build(
        AttentionRNN(cell, return_attention_scores=True, return_state=True), y, memory, mask
    )
    randomize_weights(rnn, rng)
    outputs, alignments, final = _run(rnn, y, memory, mask)

    prepared = cell.prepare_memory(memory, mask)
    states = cell.get_initial_state(BATCH)
    for t in range(STEPS):
        out, states, align = cell.step(y[:, t], states, prepared, position=t)
        np.testing.assert_allclose(to_numpy(out), outputs[:, t], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(to_numpy(align), alignments[:, t], rtol=1e-6, atol=1e-6)
    assert len(states) == len(final)
    for state, want in zip(states, final):
        np.testing.assert_allclose(to_numpy(state), want, rtol=1e-6, atol=1e-6)


# ------------------------------------------------------------- Luong without feeding == parallel
@pytest.mark.parametrize(
    "kwargs",
    [
        {"score_mode": "dot"},
        {"score_mode": "general"},
        {"score_mode": "concat"},
        {"score_mode": "general", "alignment": "local_monotonic", "window_radius": 1},
        {"score_mode": "concat", "alignment": "local_predictive", "window_radius": 2},
    ],
    ids=["dot", "general", "concat", "general-localm", "concat-localp"],
)
def test_luong_without_input_feeding_equals_lstm_then_parallel_attention(kwargs):
    rng = np.random.default_rng(21)
    y, memory, mask, _ = _data(rng, UNITS, target_mask=False)  # every row has a valid position
    cell = LuongAttentionCell(
        keras.layers.LSTMCell(UNITS), LuongAttention(**kwargs), input_feeding=False
    )
    rnn = _build(AttentionRNN(cell, return_attention_scores=True), y, memory, mask)
    randomize_weights(rnn, rng)
    outputs, alignments = (to_numpy(a) for a in rnn(y, memory, memory_mask=mask))

    lstm = keras.layers.LSTM(UNITS, return_sequences=True)
    attention = LuongAttention(**kwargs, attention_units=UNITS)
    hidden = lstm(y)
    attention([hidden, memory], mask=[None, mask])
    for name in ("kernel", "recurrent_kernel", "bias"):
        getattr(lstm.cell, name).assign(getattr(cell.cell, name))
    cell_attention = {w.name: w for w in cell.attention.weights}
    for w in attention.weights:
        w.assign(cell.attention_kernel if w.name == "attention_kernel" else cell_attention[w.name])
    assert {w.name for w in attention.weights} == set(cell_attention) | {"attention_kernel"}
    parallel, weights = attention(
        [lstm(y), memory], mask=[None, mask], return_attention_scores=True
    )
    np.testing.assert_allclose(alignments, to_numpy(weights), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outputs, to_numpy(parallel), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ gradients
@pytest.mark.parametrize("kind", ["luong", "bahdanau"])
def test_gradients_reach_the_encoder(kind):
    vocab, src_len, tgt_len, dim = 11, 6, 4, 8
    src = keras.Input((src_len,), dtype="int32")
    tgt = keras.Input((tgt_len,), dtype="int32")
    source_embedding = keras.layers.Embedding(vocab, dim, mask_zero=True)
    encoder = keras.layers.LSTM(dim, return_sequences=True, return_state=True)
    encoded, h, c = encoder(source_embedding(src))
    if kind == "luong":
        cell = LuongAttentionCell(keras.layers.LSTMCell(dim), LuongAttention("general"))
    else:
        cell = BahdanauAttentionCell(keras.layers.LSTMCell(dim), AdditiveAttention(score_units=5))
    decoded, alignments = AttentionRNN(cell, return_attention_scores=True)(
        keras.layers.Embedding(vocab, dim, mask_zero=True)(tgt), encoded, initial_state=[h, c]
    )
    model = keras.Model([src, tgt], [keras.layers.Dense(vocab)(decoded), alignments])

    rng = np.random.default_rng(0)
    src_ids = rng.integers(1, vocab, size=(2, src_len))
    src_ids[1, 3:] = 0  # source padding
    tgt_ids = rng.integers(1, vocab, size=(2, tgt_len))
    tgt_ids[1, 2:] = 0  # target padding
    projection = rng.normal(size=(2, tgt_len, vocab)).astype("float32")
    variables = model.trainable_variables
    _, alignments = model([src_ids, tgt_ids])
    loss, grads = value_and_grad(
        lambda: ops.sum(ops.multiply(model([src_ids, tgt_ids])[0], projection)), variables
    )
    # Both Keras masks (mask_zero) reached the decoder: no weight on source padding, padded
    # target steps give zero alignments.
    alignments = to_numpy(alignments)
    assert np.all(alignments[1, :, 3:] == 0.0) and np.all(alignments[1, 2:] == 0.0)
    np.testing.assert_allclose(alignments[:, :2].sum(-1), 1.0, rtol=1e-5)
    assert np.isfinite(loss)
    assert len(variables) >= 9  # 2 embeddings, encoder LSTM, cell, attention, dense
    for var, grad in zip(variables, grads):
        assert grad is not None, var.path
        assert np.all(np.isfinite(grad)), var.path
    encoder_side = {
        id(v) for v in encoder.trainable_variables + source_embedding.trainable_variables
    }
    encoder_grads = [g for v, g in zip(variables, grads) if id(v) in encoder_side]
    assert len(encoder_grads) == 4
    assert all(np.any(g != 0) for g in encoder_grads)


def _float64_rnn(kind):
    if kind == "luong":
        cell = LuongAttentionCell(
            keras.layers.LSTMCell(4, dtype="float64"),
            LuongAttention(
                "general", "local_predictive", window_radius=2, score_units=3, dtype="float64"
            ),
            dtype="float64",
        )
    else:
        cell = BahdanauAttentionCell(
            keras.layers.GRUCell(4, dtype="float64"),
            AdditiveAttention(score_units=3, dtype="float64"),
            dtype="float64",
        )
    return AttentionRNN(cell, return_attention_scores=True, dtype="float64")


# Finite differences (eps, rtol, atol). Keras 3.15 computes some float64 ops in float32 on JAX
# (`tanh`) and PyTorch (`matmul`, inside LSTMCell/GRUCell too), so the loss carries float32
# rounding (~1e-7) there: a wider step keeps that noise below 1e-4 of the derivative.
FINITE_DIFFERENCES = {"tensorflow": (1e-6, 1e-5, 1e-8)}
FINITE_DIFFERENCES_FLOAT32_INSIDE = (1e-3, 1e-3, 5e-4)


@pytest.mark.parametrize("kind", ["luong", "bahdanau"])
def test_gradients_match_finite_differences_float64(kind):
    with enable_float64():  # JAX computes in float32 otherwise
        _check_float64_gradients(kind)


def _check_float64_gradients(kind):
    rng = np.random.default_rng(3)
    y = ops.convert_to_tensor(rng.normal(size=(2, 3, 2)), "float64")
    memory = variable(rng.normal(size=(2, 5, 3)), dtype="float64", name="memory")
    mask = np.array([[True] * 5, [True] * 3 + [False] * 2])
    rnn = _float64_rnn(kind)
    rnn(y, memory, memory_mask=mask)
    randomize_weights(rnn, rng)
    for w in rnn.weights:  # randomize_weights draws float32 values: widen them
        w.assign(to_numpy(w).astype(np.float64) + 1e-3 * rng.normal(size=w.shape))
    proj_out = rng.normal(size=(2, 3, rnn.cell.output_size))
    proj_align = rng.normal(size=(2, 3, 5))

    def loss_fn():
        outputs, alignments = rnn(y, memory, memory_mask=mask)
        dtypes = {keras.backend.standardize_dtype(x.dtype) for x in (outputs, alignments)}
        assert dtypes == {"float64"}, dtypes
        return ops.sum(ops.multiply(outputs, proj_out)) + ops.sum(
            ops.multiply(alignments, proj_align)
        )

    variables = [memory] + list(rnn.cell.attention.trainable_weights)
    if kind == "luong":
        variables.append(rnn.cell.attention_kernel)
    _, grads = value_and_grad(loss_fn, variables)
    evaluate = _compiled_loss(loss_fn, [memory] + rnn.weights)
    eps, rtol, atol = FINITE_DIFFERENCES.get(BACKEND, FINITE_DIFFERENCES_FLOAT32_INSIDE)
    for var, grad in zip(variables, grads):
        assert grad is not None, var.name
        grad = grad.reshape(-1)
        base = to_numpy(var)
        assert base.dtype == np.float64, var.name
        flat = base.reshape(-1)
        picks = rng.choice(flat.size, size=min(flat.size, 5), replace=False)
        if var is memory:  # include a padded position: its gradient must be exactly 0
            picks = np.append(picks, np.ravel_multi_index((1, 4, 0), base.shape))
        for i in picks:
            bumped = flat.copy()
            bumped[i] += eps
            var.assign(bumped.reshape(base.shape))
            up = evaluate()
            bumped[i] -= 2 * eps
            var.assign(bumped.reshape(base.shape))
            down = evaluate()
            var.assign(base)
            numeric = (up - down) / (2 * eps)
            np.testing.assert_allclose(
                grad[i], numeric, rtol=rtol, atol=atol, err_msg=f"{var.name}[{i}]"
            )
    assert np.all(grads[0][1, 3:] == 0.0)  # padded memory gets no gradient


def _compiled_loss(loss_fn, variables):
    """`float(loss_fn())` at the variables' current values. On JAX the loss is compiled once as a
    function of the values (an eager JAX call compiles its `lax.scan` anew every time)."""
    if BACKEND != "jax":
        return lambda: float(to_numpy(loss_fn()))
    import jax

    @jax.jit
    def stateless(values):
        with keras.StatelessScope(state_mapping=list(zip(variables, values))):
            return loss_fn()

    return lambda: float(to_numpy(stateless([v.value for v in variables])))


# ------------------------------------------------------------------ fully masked memory rows
@pytest.mark.parametrize(
    "attention",
    [
        lambda: AdditiveAttention(score_units=5),
        lambda: LuongAttention("general", "local_monotonic", window_radius=1),
        lambda: LuongAttention("concat", "local_predictive", window_radius=2),
    ],
    ids=["additive", "general-localm", "concat-localp"],
)
def test_fully_masked_memory_row_gives_zero_context_and_no_nan(attention):
    rng = np.random.default_rng(8)
    mask = np.array([[True] * MEMORY, [False] * MEMORY, [True] * 3 + [False] * 4])
    y, memory, mask, tmask = _data(rng, 5, memory_mask=mask)
    cell = BahdanauAttentionCell(keras.layers.LSTMCell(UNITS), attention())
    rnn = _build(
        AttentionRNN(cell, return_attention_scores=True, return_state=True), y, memory, mask
    )
    randomize_weights(rnn, rng)
    memory_var = variable(memory, name="memory")
    projection = rng.normal(size=(BATCH, STEPS, cell.output_size)).astype("float32")
    outputs, alignments, *states = rnn(y, memory_var, memory_mask=mask, mask=tmask)

    def loss_fn():
        out = rnn(y, memory_var, memory_mask=mask, mask=tmask)[0]
        return ops.sum(ops.multiply(out, projection))

    _, grads = value_and_grad(loss_fn, [memory_var] + rnn.trainable_weights)
    outputs, alignments = to_numpy(outputs), to_numpy(alignments)
    assert np.all(outputs[1, :, UNITS:] == 0.0)  # the context half of [s_t; c_t]
    assert np.all(alignments[1] == 0.0)
    assert np.any(outputs[1, :, :UNITS] != 0.0)  # the decoder still runs
    for x in [outputs, alignments] + [to_numpy(s) for s in states]:
        assert not np.any(np.isnan(x))
    for g in grads:
        assert g is not None and np.all(np.isfinite(g))
    assert np.all(grads[0][1] == 0.0)

    want = ref.bahdanau_decoder(
        y,
        memory,
        mask,
        ref.lstm_cell,
        layer_weights(cell.cell),
        {
            **_attention_ref(type(cell.attention), cell.attention.get_config()),
            "weights": layer_weights(cell.attention),
        },
        target_mask=tmask,
    )
    np.testing.assert_allclose(outputs, want[0], **TOL)
    np.testing.assert_allclose(alignments, want[1], **TOL)


@pytest.mark.parametrize("kind", ["luong", "bahdanau"])
def test_cell_dropout_masks_are_drawn_once_per_call(kind):
    """A wrapped cell's dropout (`LSTMCell(dropout=..., recurrent_dropout=...)`, each cell of a
    `StackedRNNCells`) draws its masks once per training call, before the time loop, as
    `keras.layers.RNN` does: the same masks at every step (the hand loop over `cell.step` with
    the masks the cells hold gives the same outputs), fresh masks at the next call, any batch
    size, no mask kept after the call. (Drawn inside the loop they were kept forever: every
    call reused the first call's masks, another batch size failed, and JAX leaked a tracer.)"""
    rng = np.random.default_rng(29)
    y, memory, mask, tmask = _data(rng, 5)
    cells = [
        keras.layers.GRUCell(4, dropout=0.3, recurrent_dropout=0.4),
        keras.layers.LSTMCell(UNITS, dropout=0.5, recurrent_dropout=0.2),
    ]
    stacked = keras.layers.StackedRNNCells(cells)
    attention = AdditiveAttention(score_units=5)
    if kind == "luong":
        cell = LuongAttentionCell(stacked, attention)
    else:
        cell = BahdanauAttentionCell(stacked, attention)
    rnn = _build(AttentionRNN(cell), y, memory, mask)
    randomize_weights(rnn, rng)

    def train(y, memory, mask, tmask):
        return to_numpy(rnn(y, memory, memory_mask=mask, mask=tmask, training=True))

    first, second = train(y, memory, mask, tmask), train(y, memory, mask, tmask)
    assert np.all(np.isfinite(first)) and not np.allclose(first, second)
    inference = to_numpy(rnn(y, memory, memory_mask=mask, mask=tmask))
    assert not np.allclose(first, inference)
    np.testing.assert_allclose(to_numpy(rnn(y, memory, memory_mask=mask, mask=tmask)), inference)
    assert train(y[:2], memory[:2], mask[:2], tmask[:2]).shape[0] == 2  # another batch size

    # Masks the cells already hold (drawn here by hand) serve every step of the hand loop,
    # then the whole call, which leaves none behind.
    inputs = ops.ones((BATCH, cells[0].kernel.shape[0]))
    for layer, width in zip(cells, (4, UNITS)):
        layer.get_dropout_mask(inputs)
        layer.get_recurrent_dropout_mask(ops.ones((BATCH, width)))
        inputs = ops.ones((BATCH, width))
    prepared = cell.prepare_memory(memory, mask)
    states = cell.get_initial_state(BATCH, memory)
    by_hand = []
    for t in range(STEPS):
        out, new_states, _ = cell.step(y[:, t], states, prepared, position=t, training=True)
        valid = tmask[:, t][:, None]
        states = [ops.where(valid, n, o) for n, o in zip(new_states, states)]
        by_hand.append(np.where(valid, to_numpy(out), 0.0))
    whole = train(y, memory, mask, tmask)
    np.testing.assert_allclose(whole, np.stack(by_hand, 1), **TOL)
    assert not np.allclose(train(y, memory, mask, tmask), whole)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize(
    "kwargs, width",
    [({}, MEMORY), ({"alignment": "local_monotonic", "window_radius": 1}, 3)],
    ids=["global", "local_monotonic"],
)
def test_attention_dropout_masks_are_drawn_before_the_loop(kwargs, width, compiled, monkeypatch):
    """In training, the attention weights' dropout masks of every step are drawn at once before
    `AttentionRNN`'s time loop (`[T, B, 1, S]`, or `[T, B, 1, 2D + 1]` over local windows: the
    layer's generator's first draw), so that the loop carries no random state (JAX's traced
    loop leaked the generator's update: `fit` failed); the decoder equals the float64 reference
    whose step-t weights are multiplied by mask t, compiled or not."""
    if compiled and BACKEND == "torch":
        pytest.skip("torch.compile of the loop takes 15-40 s on CPU; the eager case covers PyTorch")
    rng = np.random.default_rng(31)
    y, memory, mask, tmask = _data(rng, 5)
    rate, seed = 0.4, 5
    attention = LuongAttention("general", dropout=rate, seed=seed, **kwargs)
    cell = LuongAttentionCell(keras.layers.LSTMCell(UNITS), attention)
    rnn = _build(AttentionRNN(cell, return_attention_scores=True), y, memory, mask)
    randomize_weights(rnn, rng)

    def run(y, memory, mask, tmask):
        # The draw to expect, in the same function (XLA may pick another random algorithm):
        # a fresh generator's first seed is the integer seed's.
        keep = keras.random.dropout(ops.ones((STEPS, BATCH, 1, width)), rate, seed=seed)
        return (*rnn(y, memory, memory_mask=mask, mask=tmask, training=True), keep)

    outputs, alignments, keep = (jit(run) if compiled else run)(y, memory, mask, tmask)
    keep = to_numpy(keep)[:, :, 0].astype(np.float64)  # [T, B, n]
    assert 0 < np.mean(keep == 0) < 1
    original = ref._attend

    def dropped(query, memory, memory_mask, t, attention_kwargs):
        _, alpha = original(query, memory, memory_mask, t, attention_kwargs)
        if kwargs:  # the window of step t: c - D ... c + D, c = min(t, S_b - 1) (local-m)
            window = np.zeros_like(alpha)
            for b in range(alpha.shape[0]):
                center = min(t, int(memory_mask[b].sum()) - 1)
                for j, i in enumerate(range(center - 1, center + 2)):
                    if 0 <= i < alpha.shape[1]:
                        window[b, i] = keep[t, b, j]
            alpha = alpha * window
        else:
            alpha = alpha * keep[t]
        return np.einsum("bs,bsd->bd", alpha, np.asarray(memory, np.float64)), alpha

    monkeypatch.setattr(ref, "_attend", dropped)
    attention_ref = {**_attention_ref(LuongAttention, {"score_mode": "general", **kwargs})}
    want, want_alignments, _ = ref.luong_decoder(
        y, memory, mask, ref.lstm_cell, layer_weights(cell.cell),
        {**attention_ref, "weights": layer_weights(attention)},
        to_numpy(cell.attention_kernel), target_mask=tmask,
    )  # fmt: skip
    np.testing.assert_allclose(to_numpy(alignments), want_alignments, **TOL)
    np.testing.assert_allclose(to_numpy(outputs), want, **TOL)

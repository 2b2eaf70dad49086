"""LuongAttentionCell's AttentionWrapper options and the hardmax probability function.

`attention_layer=False` (h̃ is the context), `output_attention=False` (the cell outputs s_t while
h̃ is fed), several attention layers with one `W_c` each (`attention_units` a list) or
without attention layer, and `probability_fn="hardmax"` on the attention layers: against the
float64 NumPy decoders of tests/reference_cells.py (memory padding full of garbage, decoder
padding with a hole); `.keras` round trips with safe loading; greedy search over a cell with
several attentions equals teacher forcing its own output; bad arguments are named. The numbers of
TensorFlow Addons itself are checked in tests/compat/tfa.
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
from keras_attention.decoding import beam_search, greedy_search, make_step_fn
from tests import reference
from tests import reference_cells as ref
from tests.backend_utils import to_numpy
from tests.conftest import layer_weights, randomize_weights

TOL = {"rtol": 1e-5, "atol": 1e-5}
BATCH, STEPS, MEMORY, D_Y, UNITS, D_H = 3, 4, 6, 3, 5, 4
CELLS = {
    "lstm": (keras.layers.LSTMCell, ref.lstm_cell),
    "gru": (keras.layers.GRUCell, ref.gru_cell),
}


def _data(rng):
    y = rng.normal(size=(BATCH, STEPS, D_Y)).astype("float32")
    memory = rng.normal(size=(BATCH, MEMORY, D_H)).astype("float32")
    mask = np.arange(MEMORY)[None, :] < np.array([MEMORY, 3, 1])[:, None]
    memory[~mask] = 50.0 * rng.normal(size=memory[~mask].shape)  # garbage padding
    tmask = np.array([[True] * 4, [True, True, False, False], [True, False, True, False]])
    return y, memory, mask, tmask


def _ref_kwargs(layer):
    """tests.reference.attention keyword arguments for an attention layer."""
    if isinstance(layer, AdditiveAttention):
        out = {"mode": "additive", "normalize": layer.normalize}
    else:
        out = {"mode": layer.score_mode, "alignment": layer.alignment}
        out["window_radius"] = layer.window_radius
    out.update(
        use_scale=layer.use_scale,
        probability_fn=layer.probability_fn,
        weights=layer_weights(layer),
    )
    return out


def _attentions(names):
    made = {
        "general": lambda: LuongAttention("general"),
        "concat": lambda: LuongAttention("concat", score_units=3),
        "additive": lambda: AdditiveAttention(score_units=3, normalize=True),
        "general-hardmax": lambda: LuongAttention("general", probability_fn="hardmax"),
        "additive-hardmax": lambda: AdditiveAttention(score_units=3, probability_fn="hardmax"),
        "general-localm-hardmax": lambda: LuongAttention(
            "general", "local_monotonic", window_radius=1, probability_fn="hardmax"
        ),
    }
    return [made[n]() for n in names]


# (id, cell, attentions, LuongAttentionCell kwargs)
CASES = [
    ("gru-no-attention-layer", "gru", ["general"], {"attention_layer": False}),
    (
        "lstm-output-cell-linear",
        "lstm",
        ["additive"],
        {"output_attention": False, "attention_units": 3, "attention_activation": None},
    ),
    ("lstm-two-layers", "lstm", ["general", "additive"], {"attention_units": [2, 4]}),
    ("gru-two-no-attention-layer", "gru", ["concat", "general"], {"attention_layer": False}),
    (
        "lstm-two-output-cell-default-units",
        "lstm",
        ["general", "concat"],
        {"output_attention": False, "attention_activation": None},
    ),
    ("gru-hardmax-no-feed", "gru", ["general-hardmax"], {"input_feeding": False}),
    (
        "lstm-hardmax-two",
        "lstm",
        ["additive-hardmax", "general-localm-hardmax"],
        {"attention_units": [3, 3]},
    ),
]


@pytest.mark.parametrize(
    "seed, case", list(enumerate(c[1:] for c in CASES)), ids=[c[0] for c in CASES]
)
def test_options_match_reference(seed, case):
    kind, names, kwargs = case
    rng = np.random.default_rng(seed)
    y, memory, mask, tmask = _data(rng)
    layers = _attentions(names)
    cell = LuongAttentionCell(
        CELLS[kind][0](UNITS), layers if len(layers) > 1 else layers[0], **kwargs
    )
    rnn = AttentionRNN(cell, return_attention_scores=True, return_state=True)
    rnn(y, memory, memory_mask=mask)
    randomize_weights(rnn, rng)
    outputs, alignments, *states = rnn(y, memory, memory_mask=mask, mask=tmask)
    kernels = None
    if cell.attention_layer:
        kernels = [to_numpy(k) for k in cell.attention_layer_kernels]
    want = ref.luong_decoder(
        y,
        memory,
        mask,
        CELLS[kind][1],
        layer_weights(cell.cell),
        [_ref_kwargs(layer) for layer in cell.attentions],
        kernels,
        input_feeding=kwargs.get("input_feeding", True),
        activation=kwargs.get("attention_activation", "tanh"),
        target_mask=tmask,
        output_attention=kwargs.get("output_attention", True),
    )
    np.testing.assert_allclose(to_numpy(alignments), want[1], **TOL)
    np.testing.assert_allclose(to_numpy(outputs), want[0], **TOL)
    assert len(states) == len(want[2])
    for state, expected in zip(states, want[2]):
        np.testing.assert_allclose(to_numpy(state), expected, **TOL)
    assert cell.output_size == want[0].shape[-1]
    assert not np.isnan(to_numpy(outputs)).any()
    alignments = to_numpy(alignments)
    assert np.all(alignments[np.broadcast_to(~mask[:, None, :], alignments.shape)] == 0.0)


@pytest.mark.parametrize("alignment", ["global", "local_monotonic"])
def test_hardmax_layer_matches_reference(alignment):
    rng = np.random.default_rng(21)
    query = rng.normal(size=(BATCH, STEPS, D_H)).astype("float32")
    _, memory, mask, _ = _data(rng)
    mask[2] = False  # a row with no valid position: zero weights, zero context
    layer = LuongAttention("general", alignment, window_radius=1, probability_fn="hardmax")
    layer([query, memory], value_mask=mask)
    randomize_weights(layer, rng)
    context, weights = layer([query, memory], value_mask=mask, return_attention_scores=True)
    want_context, want_weights = reference.attention(
        query, memory, value_mask=mask, **_ref_kwargs(layer)
    )
    weights = to_numpy(weights)
    np.testing.assert_allclose(weights, want_weights, **TOL)
    np.testing.assert_allclose(to_numpy(context), want_context, **TOL)
    assert set(np.unique(weights)) <= {0.0, 1.0}
    np.testing.assert_array_equal(weights[:2].sum(-1), 1.0)
    assert np.all(weights[2] == 0.0) and np.all(to_numpy(context)[2] == 0.0)


def test_hardmax_ties_go_to_the_first_valid_position():
    from keras_attention.functional import masked_hardmax

    scores = np.array([[2.0, 5.0, 5.0, 9.0], [1.0, 1.0, 1.0, 1.0]], "float32")
    mask = np.array([[False, True, True, False], [False, False, True, True]])
    np.testing.assert_array_equal(
        to_numpy(masked_hardmax(scores, mask)), [[0, 1, 0, 0], [0, 0, 1, 0]]
    )


def _several_model():
    """A functional model over a cell with every new option that changes the layout."""
    y = keras.Input((None, D_Y))
    memory = keras.Input((None, D_H))
    cell = LuongAttentionCell(
        keras.layers.LSTMCell(UNITS),
        [LuongAttention("general", probability_fn="hardmax"), AdditiveAttention(score_units=3)],
        attention_units=[2, 3],
        output_attention=False,
        attention_activation=None,
    )
    bare = LuongAttentionCell(
        keras.layers.GRUCell(UNITS), LuongAttention("concat"), attention_layer=False
    )
    first, scores = AttentionRNN(cell, return_attention_scores=True)(y, memory)
    second = AttentionRNN(bare)(y, memory)
    return keras.Model([y, memory], [first, scores, second])


def test_keras_round_trip_with_safe_mode(tmp_path):
    rng = np.random.default_rng(3)
    y, memory, _, _ = _data(rng)
    model = _several_model()
    randomize_weights(model, rng)
    before = [to_numpy(x) for x in model([y, memory])]
    assert [b.shape[-1] for b in before] == [UNITS, MEMORY, D_H]
    path = str(tmp_path / "options.keras")
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    for got, want in zip(loaded([y, memory]), before):
        np.testing.assert_array_equal(to_numpy(got), want)
    configs = [layer.get_config() for layer in loaded.layers if isinstance(layer, AttentionRNN)]
    luong = [c["cell"]["config"] for c in configs]
    assert any(c["attention_units"] == [2, 3] and not c["output_attention"] for c in luong)
    assert not any("units" in c for c in luong)  # configs emit the new name only
    assert any(not c["attention_layer"] for c in luong)


def test_greedy_search_with_several_attentions_equals_teacher_forcing():
    """Greedy search over a two-attention cell without attention layer (its size is learned
    from the memory, the cell not built yet), replayed teacher-forced through AttentionRNN."""
    rng = np.random.default_rng(8)
    _, memory, mask, _ = _data(rng)
    vocab = 7
    embedding = keras.layers.Embedding(vocab, D_Y)
    projection = keras.layers.Dense(vocab)
    cell = LuongAttentionCell(
        keras.layers.GRUCell(UNITS),
        [LuongAttention("general"), AdditiveAttention(score_units=3)],
        attention_layer=False,
    )
    step_fn = make_step_fn(cell, embedding, projection, memory, mask)
    state = cell.get_initial_state(BATCH)  # before the cell is built: sizes from the memory
    assert [int(s.shape[-1]) for s in state] == [UNITS, 2 * D_H]
    result = greedy_search(step_fn, state, BATCH, start_id=1, end_id=2, max_length=4)
    ids = to_numpy(result["ids"])
    previous = np.concatenate([np.ones((BATCH, 1), "int32"), ids[:, :-1]], axis=1)
    rnn = AttentionRNN(cell, return_attention_scores=True)
    outputs, alignments = rnn(embedding(previous), memory, memory_mask=mask)
    logits = to_numpy(projection(outputs))
    steps = np.arange(4)[None, :] < to_numpy(result["lengths"])[:, None]
    np.testing.assert_array_equal(np.argmax(logits, -1)[steps], ids[steps])
    np.testing.assert_allclose(
        to_numpy(result["alignments"])[steps], to_numpy(alignments)[steps], **TOL
    )


def test_beam_search_scores_equal_teacher_forced_log_probabilities():
    """Beam search over a cell with two attention layers: the best hypothesis' score is the
    sum of its teacher-forced log-probabilities and its alignments are the replayed ones."""
    rng = np.random.default_rng(11)
    _, memory, mask, _ = _data(rng)
    vocab, width, length = 6, 2, 4
    embedding = keras.layers.Embedding(vocab, D_Y)
    projection = keras.layers.Dense(vocab)
    cell = LuongAttentionCell(
        keras.layers.LSTMCell(UNITS),
        [AdditiveAttention(score_units=3), LuongAttention("general", probability_fn="hardmax")],
        attention_units=[3, 2],
        output_attention=False,
    )
    step_fn = make_step_fn(cell, embedding, projection, memory, mask, beam_width=width)
    result = beam_search(
        step_fn,
        cell.get_initial_state(BATCH),
        BATCH,
        start_id=1,
        end_id=2,
        max_length=length,
        beam_width=width,
        length_penalty=0.0,
    )
    ids = to_numpy(result["ids"])
    previous = np.concatenate([np.ones((BATCH, 1), "int32"), ids[:, :-1]], axis=1)
    outputs, alignments = AttentionRNN(cell, return_attention_scores=True)(
        embedding(previous), memory, memory_mask=mask
    )
    logits = to_numpy(projection(outputs)).astype("float64")
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    picked = np.take_along_axis(log_probs, ids[..., None], axis=-1)[..., 0]
    steps = np.arange(length)[None, :] < to_numpy(result["lengths"])[:, None]
    np.testing.assert_allclose(
        (picked * steps).sum(-1), to_numpy(result["scores"]), rtol=1e-4, atol=1e-4
    )
    np.testing.assert_allclose(
        to_numpy(result["alignments"])[steps], to_numpy(alignments)[steps], **TOL
    )


def _cell(**kwargs):
    attention = kwargs.pop("attention", LuongAttention())
    return LuongAttentionCell(keras.layers.GRUCell(4), attention, **kwargs)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"attention": [LuongAttention(), LuongAttention()], "attention_units": 3},
            "attention_units=3",
        ),
        (
            {"attention": [LuongAttention(), LuongAttention()], "attention_units": [3]},
            r"attention_units=\[3\]",
        ),
        (
            {"attention": [LuongAttention(), LuongAttention()], "attention_units": [3, 0]},
            r"attention_units=\[3, 0\]",
        ),
        ({"attention_units": [2.5]}, r"attention_units=\[2.5\]"),
        ({"attention_layer": False, "attention_units": 3}, "attention_units=3"),
        # The old name: the error names the argument the user passed.
        ({"attention": [LuongAttention(), LuongAttention()], "units": 3}, "Received: units=3"),
        ({"attention_layer": False, "units": 3}, "Received: units=3"),
        ({"units": 3, "attention_units": 3}, "units=3, attention_units=3"),
        ({"output_attention": False, "input_feeding": False}, "input_feeding=False"),
        ({"attention_layer": "no"}, "attention_layer='no'"),
        ({"output_attention": 2}, "output_attention=2"),
        ({"attention": []}, r"attention=\[\]"),
        ({"attention": [LuongAttention(), LuongAttention(attention_units=3)]}, r"attention\[1\]"),
    ],
)
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        _cell(**kwargs)


def test_bad_attention_lists_are_named():
    layer = LuongAttention()
    with pytest.raises(ValueError, match="more than once"):
        _cell(attention=[layer, layer])
    with pytest.raises(TypeError, match=r"attention\[1\]"):
        _cell(attention=[layer, "dot"])
    with pytest.raises(ValueError, match="one attention layer"):
        BahdanauAttentionCell(keras.layers.GRUCell(4), [LuongAttention(), LuongAttention()])
    unbuilt = _cell(attention_layer=False)
    with pytest.raises(ValueError, match="attention_layer=False"):
        unbuilt.get_initial_state(2)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"probability_fn": "entmax"}, "probability_fn='entmax'"),
        (
            {"probability_fn": "hardmax", "alignment": "local_predictive"},
            "alignment='local_predictive'",
        ),
    ],
)
def test_bad_probability_fn_is_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LuongAttention(**kwargs)
    if "alignment" not in kwargs:
        with pytest.raises(ValueError, match=message):
            AdditiveAttention(**kwargs)


def test_prepared_memory_is_a_named_type():
    # Issue 14: "memory" was the encoder tensor, `(keys, value, mask)` and
    # `((keys, value, mask), feed_kernel)`; the prepared forms are named types (still tuples).
    from keras_attention.cells.base_attention_cell import CellMemory
    from keras_attention.layers.base_attention import PreparedMemory

    memory = np.random.default_rng(0).normal(size=(2, 3, 4)).astype("float32")
    mask = np.array([[True, True, False], [True, True, True]])
    layers = [LuongAttention("concat", score_units=5), LuongAttention("dot")]
    cell = LuongAttentionCell(keras.layers.LSTMCell(4), layers, attention_units=[4, 4])
    prepared = cell.prepare_memory(keras.ops.convert_to_tensor(memory), mask)
    assert isinstance(prepared, CellMemory) and len(prepared.attentions) == 2
    assert all(isinstance(p, PreparedMemory) for p in prepared.attentions)
    expected = np.where(mask[..., None], memory, 0.0)  # padding zeroed
    np.testing.assert_array_equal(to_numpy(prepared.value), expected)
    np.testing.assert_array_equal(to_numpy(prepared.attentions[1].mask), mask)
    keys, value, _ = prepared.attentions[0]  # unpacks as the tuple it was
    assert tuple(keys.shape) == (2, 3, 5) and value is prepared.value  # concat: [B, S, U]
    assert tuple(prepared.attentions[1].keys.shape) == (2, 4, 3)  # dot: [B, d, S], once


def test_attention_layer_kernels_is_the_public_view_of_w_c():
    """`attention_layer_kernels` (what the tfa checkpoint migration maps): one `W_c` per
    attention layer, `[d_s + d_h, units_i]`, the cell's own variables; none without the layer."""
    two = LuongAttentionCell(
        keras.layers.LSTMCell(4),
        [LuongAttention("dot"), LuongAttention("general")],
        attention_units=[3, 5],
    )
    assert two.attention_layer_kernels == []  # not built yet
    two.build((2, 6), (2, 7, 4))
    kernels = two.attention_layer_kernels
    assert [tuple(k.shape) for k in kernels] == [(8, 3), (8, 5)]
    assert all(any(k is w for w in two.weights) for k in kernels)
    bare = LuongAttentionCell(keras.layers.GRUCell(4), LuongAttention("dot"), attention_layer=False)
    bare.build((2, 6), (2, 7, 4))
    assert bare.attention_layer_kernels == []

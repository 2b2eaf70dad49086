"""AttentionRNN and the attentional cells: the layer contract, masks, export and errors."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from keras_attention import (
    AdditiveAttention,
    AttentionRNN,
    BahdanauAttentionCell,
    LuongAttention,
    LuongAttentionCell,
    LuongMonotonicAttention,
)
from tests.backend_utils import BACKEND, to_numpy

VOCAB, DIM, UNITS = 15, 8, 12
# XLA on TensorFlow and JAX. On PyTorch `jit_compile=True` is torch.compile (Inductor), which
# takes minutes per model on a CPU: there the same tests run eagerly.
JIT_COMPILE = BACKEND != "torch"


def _luong_lstm():
    return LuongAttentionCell(keras.layers.LSTMCell(UNITS), LuongAttention("general"))


def _luong_gru_local_m():
    return LuongAttentionCell(
        keras.layers.GRUCell(UNITS),
        LuongAttention("concat", "local_monotonic", window_radius=2),
        input_feeding=False,
        attention_units=10,
    )


def _luong_lstm_local_p():
    return LuongAttentionCell(
        keras.layers.LSTMCell(UNITS),
        LuongAttention("general", "local_predictive", window_radius=2, use_scale=True),
        attention_activation=None,
    )


def _bahdanau_gru():
    return BahdanauAttentionCell(keras.layers.GRUCell(UNITS), AdditiveAttention(score_units=9))


def _bahdanau_stacked():
    cells = keras.layers.StackedRNNCells([keras.layers.LSTMCell(UNITS), keras.layers.GRUCell(7)])
    return BahdanauAttentionCell(cells, AdditiveAttention(normalize=True))


def _bahdanau_simple_rnn():
    return BahdanauAttentionCell(keras.layers.SimpleRNNCell(UNITS), LuongAttention("general"))


def _luong_two_attentions():
    """tfa-style: two attention layers (one hardmax), a W_c each, the cell output s_t out."""
    return LuongAttentionCell(
        keras.layers.LSTMCell(UNITS),
        [LuongAttention("general", probability_fn="hardmax"), AdditiveAttention(score_units=5)],
        attention_units=[4, 6],
        output_attention=False,
        attention_activation=None,
    )


CELLS = [
    _luong_lstm,
    _luong_gru_local_m,
    _luong_lstm_local_p,
    _bahdanau_gru,
    _bahdanau_stacked,
    _bahdanau_simple_rnn,
    _luong_two_attentions,
]
CELL_IDS = [f.__name__.strip("_") for f in CELLS]


def _model(make_cell, hand_over=False):
    src = keras.Input((None,), dtype="int32", name="source")
    tgt = keras.Input((None,), dtype="int32", name="target")
    encoder = keras.layers.LSTM(UNITS, return_sequences=True, return_state=True)
    memory, h, c = encoder(keras.layers.Embedding(VOCAB, DIM, mask_zero=True)(src))
    cell = make_cell()
    initial_state = [h, c][: len(keras.tree.flatten(cell.cell.state_size))] if hand_over else None
    outputs, alignments = AttentionRNN(cell, return_attention_scores=True, name="decoder")(
        keras.layers.Embedding(VOCAB, DIM, mask_zero=True)(tgt), memory,
        initial_state=initial_state,
    )  # fmt: skip
    logits = keras.layers.Dense(VOCAB, name="logits")(outputs)
    return keras.Model({"source": src, "target": tgt}, {"logits": logits, "alignments": alignments})


def _data(seed, batch=6, source=9, target=7):
    rng = np.random.default_rng(seed)
    data = {}
    for name, length in (("source", source), ("target", target)):
        tokens = rng.integers(1, VOCAB, size=(batch, length))
        lengths = rng.integers(1, length + 1, size=batch)
        lengths[0] = length
        tokens[np.arange(length)[None, :] >= lengths[:, None]] = 0
        data[name] = tokens
    return data


@pytest.fixture(autouse=True)
def _seed():
    keras.utils.set_random_seed(0)


@pytest.mark.parametrize("make_cell", CELLS, ids=CELL_IDS)
def test_config_round_trip(make_cell):
    rnn = AttentionRNN(make_cell(), return_state=True, return_attention_scores=True)
    config = rnn.get_config()
    json.dumps(config)
    clone = AttentionRNN.from_config(config)
    assert clone.get_config() == config
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(rnn))
    assert restored.get_config() == config


@pytest.mark.parametrize("make_cell", CELLS, ids=CELL_IDS)
def test_padding_invariance_on_both_sides(make_cell):
    model = _model(make_cell)
    data = _data(1)
    out = model.predict(data, verbose=0)
    padded = {k: np.pad(v, ((0, 0), (0, 3))) for k, v in data.items()}
    out_padded = model.predict(padded, verbose=0)
    valid = data["target"] != 0
    np.testing.assert_allclose(out_padded["logits"][:, :7][valid], out["logits"][valid], atol=1e-5)
    np.testing.assert_allclose(out_padded["alignments"][:, :7, :9], out["alignments"], atol=1e-6)
    assert np.all(out_padded["alignments"][:, :, 9:] == 0.0)
    assert np.all(out["alignments"][~valid] == 0.0)  # padded target steps attend nowhere
    source_pad = np.broadcast_to((data["source"] == 0)[:, None, :], out["alignments"].shape)
    assert np.all(out["alignments"][source_pad] == 0.0)


@pytest.mark.slow
@pytest.mark.parametrize("make_cell", CELLS, ids=CELL_IDS)
def test_xla_fit_predict_and_keras_round_trip(make_cell, tmp_path):
    model = _model(make_cell, hand_over=make_cell is not _bahdanau_stacked)
    # 10 rows in batches of 4: the last batch is partial, so the compiled step sees a dynamic
    # batch size (XLA rejected while-loop gradients of tensordot / broadcast_to then).
    data = _data(2, batch=10)
    eager = model.predict(data, verbose=0)
    model.compile(
        "adam",
        loss={"logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)},
        jit_compile=JIT_COMPILE,
    )
    np.testing.assert_allclose(model.predict(data, verbose=0)["logits"], eager["logits"], atol=1e-4)
    history = model.fit(data, {"logits": data["target"]}, epochs=2, batch_size=4, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    expected = model.predict(data, verbose=0)
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras", safe_mode=True)
    out = loaded.predict(data, verbose=0)
    np.testing.assert_array_equal(out["logits"], expected["logits"])
    np.testing.assert_array_equal(out["alignments"], expected["alignments"])


@pytest.mark.slow
@pytest.mark.parametrize(
    "make_cell",
    [_luong_lstm, _bahdanau_gru, _luong_two_attentions],
    ids=["luong", "bahdanau", "luong-two-attentions"],
)
def test_mixed_bfloat16(make_cell):
    data = _data(3)
    reference = _model(make_cell)
    expected = reference.predict(data, verbose=0)
    keras.config.set_dtype_policy("mixed_bfloat16")
    model = _model(make_cell)
    model.set_weights(reference.get_weights())
    out = model.predict(data, verbose=0)
    logits = out["logits"].astype("float32")
    assert np.all(np.isfinite(logits))
    np.testing.assert_allclose(logits, expected["logits"], atol=0.1)
    np.testing.assert_allclose(out["alignments"].astype("float32"), expected["alignments"],
                               atol=0.05)  # fmt: skip
    model.compile("adam", loss={"logits": keras.losses.SparseCategoricalCrossentropy(
        from_logits=True)})  # fmt: skip
    history = model.fit(data, {"logits": data["target"]}, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])


@pytest.mark.slow
@pytest.mark.tensorflow_only
def test_export_reloads_without_keras_attention(tmp_path):
    model = _model(_luong_lstm_local_p, hand_over=True)
    data = _data(4)
    expected = model.predict(data, verbose=0)
    model.export(str(tmp_path / "export"), format="tf_saved_model", verbose=False)
    np.save(tmp_path / "source.npy", data["source"].astype("int32"))
    np.save(tmp_path / "target.npy", data["target"].astype("int32"))
    script = textwrap.dedent(f"""
        import sys, numpy as np, tensorflow as tf
        loaded = tf.saved_model.load({str(tmp_path / "export")!r})
        fn = loaded.signatures["serving_default"]
        ops = {{n.op for n in fn.graph.as_graph_def().node}}
        for f in fn.graph.as_graph_def().library.function:
            ops |= {{n.op for n in f.node_def}}
        assert "XlaDynamicUpdateSlice" not in ops and not any("PyFunc" in o for o in ops), ops
        out = fn(source=tf.constant(np.load({str(tmp_path / "source.npy")!r})),
                 target=tf.constant(np.load({str(tmp_path / "target.npy")!r})))
        np.save({str(tmp_path / "logits.npy")!r}, out["logits"].numpy())
        assert "keras_attention" not in sys.modules
    """)
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    np.testing.assert_allclose(np.load(tmp_path / "logits.npy"), expected["logits"], atol=1e-5)


def test_return_options_and_masks():
    memory = np.random.default_rng(0).normal(size=(2, 5, 6)).astype("float32")
    sequences = np.ones((2, 4, 3), "float32")
    rnn = AttentionRNN(_luong_lstm(), return_sequences=False, return_state=True)
    last, h, c, attentional = rnn(
        sequences, memory, mask=np.array([[1, 1, 0, 0], [1, 1, 1, 1]], bool)
    )
    full = AttentionRNN(rnn.cell)(sequences, memory)
    np.testing.assert_allclose(to_numpy(last)[1], to_numpy(full)[1, -1], atol=1e-6)
    short = AttentionRNN(rnn.cell)(sequences[:, :2], memory)
    np.testing.assert_allclose(to_numpy(last)[0], to_numpy(short)[0, -1], atol=1e-6)
    np.testing.assert_allclose(to_numpy(attentional), to_numpy(last), atol=1e-6)
    assert tuple(h.shape) == (2, UNITS) and tuple(c.shape) == (2, UNITS)


# ---------------------------------------------------------------------- errors


def test_bad_cell_and_attention():
    with pytest.raises(TypeError, match="`cell` must be a Keras RNN cell"):
        LuongAttentionCell(keras.layers.Dense(3), LuongAttention())
    with pytest.raises(TypeError, match="`attention` must be"):
        LuongAttentionCell(keras.layers.LSTMCell(3), keras.layers.Attention())
    with pytest.raises(ValueError, match="attention_units=4"):
        BahdanauAttentionCell(keras.layers.GRUCell(3), LuongAttention(attention_units=4))
    with pytest.raises(TypeError, match="`cell` must be a BahdanauAttentionCell"):
        AttentionRNN(keras.layers.LSTMCell(3))
    with pytest.raises(ValueError, match="attention_units=0"):
        LuongAttentionCell(keras.layers.LSTMCell(3), LuongAttention(), attention_units=0)


def test_bad_call_inputs():
    rnn = AttentionRNN(_luong_lstm())
    seq, mem = np.ones((2, 4, 3), "float32"), np.ones((2, 5, 6), "float32")
    with pytest.raises(ValueError, match=r"memory.shape=\(2, 5\)"):
        rnn(seq, np.ones((2, 5), "float32"))
    with pytest.raises(ValueError, match=r"memory_mask.shape=\(2, 4\)"):
        rnn(seq, mem, memory_mask=np.ones((2, 4), bool))
    with pytest.raises(ValueError, match=r"mask.shape=\(2, 5\)"):
        rnn(seq, mem, mask=np.ones((2, 5), bool))
    with pytest.raises(ValueError, match="a list of 4"):
        rnn(seq, mem, initial_state=[np.zeros((2, UNITS))] * 4)
    with pytest.raises(ValueError, match=r"initial_state\[1\].shape=\(2, 5\)"):
        rnn(seq, mem, initial_state=[np.zeros((2, UNITS)), np.zeros((2, 5))])


def test_fully_masked_memory_row_gives_zero_context():
    cell = _bahdanau_gru()
    memory = np.random.default_rng(0).normal(size=(2, 5, 6)).astype("float32")
    mask = np.array([[True] * 5, [False] * 5])
    out, alignments = AttentionRNN(cell, return_attention_scores=True)(
        np.ones((2, 3, 4), "float32"), memory, memory_mask=mask
    )
    out, alignments = to_numpy(out), to_numpy(alignments)
    assert np.all(np.isfinite(out))
    assert np.all(out[1, :, UNITS:] == 0.0) and np.all(alignments[1] == 0.0)


def test_compiled_fit_with_randomness_inside_the_loop():
    """`fit` under XLA (JAX's default) of a decoder drawing at every step in training: the
    wrapped cell's dropout, the attention weights' dropout and monotonic noise. All three are
    drawn before the time loop; drawn inside it, JAX's traced loop leaked the generators'
    updates (`UnexpectedTracerError`)."""
    if BACKEND == "torch":
        pytest.skip("torch.compile of fit takes minutes on CPU")
    attentions = [
        LuongAttention("general", dropout=0.3, seed=1),
        LuongMonotonicAttention(sigmoid_noise=1.0, mode="parallel", seed=2),
    ]
    cell = LuongAttentionCell(
        keras.layers.LSTMCell(6, dropout=0.3, recurrent_dropout=0.2, seed=3), attentions
    )
    y, memory = keras.Input((None, 3)), keras.Input((None, 5))
    model = keras.Model([y, memory], keras.layers.Dense(7)(AttentionRNN(cell)(y, memory)))
    model.compile(
        "adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=True
    )
    rng = np.random.default_rng(0)
    x = [rng.normal(size=(8, 4, 3)), rng.normal(size=(8, 6, 5))]
    history = model.fit(x, rng.integers(0, 7, (8, 4)), epochs=2, batch_size=4, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))


# A subclass is not the plain Keras cell, so the attentional cell calls it as Keras does
# instead of computing the step itself (`BaseAttentionCell._fused_kind`): Keras' own
# GRUCell / LSTMCell code is the reference for the step the cells compute in their place.
class _KerasGRUCell(keras.layers.GRUCell):
    pass


class _KerasLSTMCell(keras.layers.LSTMCell):
    pass


class _PlainEmbedding(keras.layers.Embedding):
    pass


@pytest.mark.parametrize(
    "rnn, keras_rnn, make",
    [
        (
            keras.layers.GRUCell,
            _KerasGRUCell,
            lambda c: BahdanauAttentionCell(c, AdditiveAttention()),
        ),
        (
            keras.layers.GRUCell,
            _KerasGRUCell,
            lambda c: LuongAttentionCell(c, LuongAttention("general")),
        ),
        (
            keras.layers.LSTMCell,
            _KerasLSTMCell,
            lambda c: BahdanauAttentionCell(c, AdditiveAttention()),
        ),
    ],
    ids=["bahdanau_gru", "luong_gru_input_feeding", "bahdanau_lstm"],
)
def test_the_cells_own_step_equals_keras_cell_call(rnn, keras_rnn, make):
    """The input projection outside the loop (`project_inputs`) and the step computed in the
    cell give Keras' GRUCell / LSTMCell numbers, teacher-forced and in the decoding step,
    where the embedding and projection are one looked-up table (`make_step_fn`)."""
    from keras_attention.decoding import make_step_fn

    rng = np.random.default_rng(3)
    memory = rng.normal(size=(4, 6, 10)).astype("float32")
    inputs = rng.normal(size=(4, 5, DIM)).astype("float32")
    ours, theirs = make(rnn(UNITS)), make(keras_rnn(UNITS))
    assert ours._fused_kind() is not None and theirs._fused_kind() is None
    ours_rnn, theirs_rnn = AttentionRNN(ours), AttentionRNN(theirs)
    expected = theirs_rnn(inputs, memory)
    ours_rnn(inputs, memory)
    ours_rnn.set_weights(theirs_rnn.get_weights())
    np.testing.assert_allclose(to_numpy(ours_rnn(inputs, memory)), to_numpy(expected), atol=1e-5)

    embedding, plain = keras.layers.Embedding(VOCAB, DIM), _PlainEmbedding(VOCAB, DIM)
    embedding.build((None,)), plain.build((None,))
    plain.set_weights(embedding.get_weights())
    output = keras.layers.Dense(VOCAB)
    folded = make_step_fn(ours, embedding, output, memory)
    unfolded = make_step_fn(theirs, plain, output, memory)
    assert ours.projected_table(embedding, 4) is not None
    assert theirs.projected_table(embedding, 4) is None  # the cell projects nothing
    assert ours.projected_table(plain, 4) is None  # not a plain Embedding
    assert ours.projected_table(embedding, None) is None  # rows unknown
    assert ours.projected_table(keras.layers.Embedding(65, DIM), 4) is None  # V > 16 rows
    tokens = np.array([1, 0, 14, 3], "int32")
    states = theirs_states = ours.get_initial_state(4, memory)
    for t in range(3):
        logits, states, weights = folded(tokens, states, t)
        expected_logits, theirs_states, expected_weights = unfolded(tokens, theirs_states, t)
        np.testing.assert_allclose(to_numpy(logits), to_numpy(expected_logits), atol=1e-5)
        np.testing.assert_allclose(to_numpy(weights), to_numpy(expected_weights), atol=1e-6)
        tokens = np.argmax(to_numpy(logits), axis=-1).astype("int32")

"""TensorFlow Addons' NMT tutorial, ported by docs/migrating-from-tfa.md, against tfa's numbers.

The tutorial (`docs/tutorials/networks_seq2seq_nmt.ipynb` in tensorflow/addons) builds an
`EncoderNetwork` (Embedding + LSTM) and a `DecoderNetwork` (Embedding, `LSTMCell` in an
`AttentionWrapper` over `LuongAttention`, `BasicDecoder` with a `Dense` output layer), decodes
greedily by driving `BasicDecoder.initialize` / `step` by hand and with a `BeamSearchDecoder`
over `tile_batch`-ed memory. `make_nmt_port_fixtures.py` ran that program with real tfa 0.23
(tiny sizes, synthetic ids, every variable set off its trained value) and recorded its
checkpoint, teacher-forced logits, greedy ids and logits, and beam ids and scores. Here the
port, as a migrating user writes it, loads that checkpoint and must give the same numbers.
It runs on every backend with TensorFlow installed (reading the checkpoint needs it).
"""

from __future__ import annotations

import json
from pathlib import Path

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import AttentionRNN, LuongAttention, LuongAttentionCell
from keras_attention.decoding import beam_search, greedy_search, make_step_fn
from keras_attention.migrate import load_tfa_weights
from tests.backend_utils import to_numpy

tf = pytest.importorskip("tensorflow", reason="reading a TensorFlow checkpoint needs TensorFlow")

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "nmt_port"
CHECKPOINT = str(FIXTURES / "checkpoint")
SIZES = json.loads((FIXTURES / "MANIFEST.json").read_text())["sizes"]
REF = dict(np.load(FIXTURES / "reference.npz"))
START, END = int(REF["start"]), int(REF["end"])
K, T = int(REF["beam_width"]), int(REF["max_iterations"])
B = SIZES["batch"]
# float32 through two implementations (TF 2.15 + oneDNN there, any backend here): the logits
# (up to ~15 with these weights) differ by float32 rounding of the largest ones, growing over
# the steps (up to ~10 ulps of the largest logit seen). 32 ulps; a misplaced weight is O(1) off.
LOGITS_TOL = {
    "rtol": 0.0,
    "atol": 32 * float(np.finfo(np.float32).eps) * float(np.abs(REF["greedy_logits"]).max()),
}


def _key(path):
    return f"{path}/.ATTRIBUTES/VARIABLE_VALUE"


class Port:
    """The tutorial's two networks in Keras 3 + keras_attention, weights from tfa's checkpoint."""

    def __init__(self):
        units = SIZES["rnn_units"]
        self.encoder_embedding = keras.layers.Embedding(
            SIZES["input_vocab"], SIZES["embedding_dims"]
        )
        self.encoder_rnnlayer = keras.layers.LSTM(units, return_sequences=True, return_state=True)
        self.decoder_embedding = keras.layers.Embedding(
            SIZES["output_vocab"], SIZES["embedding_dims"]
        )
        self.dense_layer = keras.layers.Dense(SIZES["output_vocab"])
        # tfa's LuongAttention(units) is LuongAttention("general"); AttentionWrapper's
        # attention layer has no tanh.
        self.cell = LuongAttentionCell(
            keras.layers.LSTMCell(units),
            LuongAttention("general"),
            attention_layer_size=SIZES["dense_units"],
            attention_activation=None,
        )
        self.rnn = AttentionRNN(self.cell)
        self.teacher_forced(REF["source"], REF["target"])  # builds every weight
        self.mapping = load_tfa_weights(self.cell, CHECKPOINT)
        reader = tf.train.load_checkpoint(CHECKPOINT)
        by_hand = [
            (self.encoder_embedding.embeddings, "encoder/encoder_embedding/embeddings"),
            (self.encoder_rnnlayer.cell.kernel, "encoder/encoder_rnnlayer/cell/kernel"),
            (
                self.encoder_rnnlayer.cell.recurrent_kernel,
                "encoder/encoder_rnnlayer/cell/recurrent_kernel",
            ),
            (self.encoder_rnnlayer.cell.bias, "encoder/encoder_rnnlayer/cell/bias"),
            (self.decoder_embedding.embeddings, "decoder/decoder_embedding/embeddings"),
            (self.dense_layer.kernel, "decoder/dense_layer/kernel"),
            (self.dense_layer.bias, "decoder/dense_layer/bias"),
        ]
        for variable, path in by_hand:
            variable.assign(reader.get_tensor(_key(path)))

    def encode(self, source):
        # The tutorial's encoder has no mask_zero and setup_memory(a) gets no lengths: the
        # memory is not masked (the constructor's memory_sequence_length is ignored by tfa).
        memory, h, c = self.encoder_rnnlayer(self.encoder_embedding(source))
        return memory, [h, c]

    def teacher_forced(self, source, target):
        memory, state = self.encode(source)
        outputs = self.rnn(self.decoder_embedding(target[:, :-1]), memory, initial_state=state)
        return self.dense_layer(outputs)  # tfa's BasicDecoder(output_layer=...)


@pytest.fixture(scope="module")
def port():
    return Port()


def _until_end(ids):
    """Each row's ids up to and including the first END (tfa goes on after it)."""
    rows = []
    for row in np.asarray(ids):
        stop = np.flatnonzero(row == END)
        rows.append(row[: stop[0] + 1 if stop.size else len(row)].tolist())
    return rows


def test_the_checkpoint_maps_under_the_users_attribute_names(port):
    keys = set(port.mapping.values())
    # The wrapped cell is stored under the tutorial's own attribute (`decoder_rnncell`), the
    # mechanism under `attention_mechanism`, the attention layer below the wrapper (`rnn_cell`).
    assert _key("decoder/decoder_rnncell/kernel") in keys
    assert _key("decoder/attention_mechanism/memory_layer/kernel") in keys
    assert _key("decoder/rnn_cell/_attention_layers/0/kernel") in keys
    assert len(keys) == 5


def test_teacher_forced_logits_match_tfa(port):
    logits = to_numpy(port.teacher_forced(REF["source"], REF["target"]))
    np.testing.assert_allclose(logits, REF["teacher_logits"], **LOGITS_TOL)


def test_step_fn_driven_by_hand_matches_tfas_initialize_step_loop(port):
    memory, encoder_state = port.encode(REF["source"])
    step_fn = make_step_fn(port.cell, port.decoder_embedding, port.dense_layer, memory)
    state = port.cell.complete_initial_state(encoder_state, B, memory)
    tokens = ops.full((B,), START, "int32")
    ids, logits = [], []
    for t in range(T):
        step_logits, state, _ = step_fn(tokens, state, t)
        tokens = ops.cast(ops.argmax(step_logits, axis=-1), "int32")
        ids.append(to_numpy(tokens))
        logits.append(to_numpy(step_logits))
    np.testing.assert_array_equal(np.stack(ids, axis=1), REF["greedy_ids"])
    np.testing.assert_allclose(np.stack(logits, axis=1), REF["greedy_logits"], **LOGITS_TOL)


def test_the_encoder_state_alone_is_a_clear_error_when_stepping_by_hand(port):
    memory, encoder_state = port.encode(REF["source"])
    step_fn = make_step_fn(port.cell, port.decoder_embedding, port.dense_layer, memory)
    with pytest.raises(ValueError, match=r"complete_initial_state\(states, batch_size, memory\)"):
        step_fn(ops.full((B,), START, "int32"), encoder_state, 0)


def test_greedy_search_from_the_encoder_state_matches_tfa(port):
    memory, encoder_state = port.encode(REF["source"])
    step_fn = make_step_fn(port.cell, port.decoder_embedding, port.dense_layer, memory)
    result = greedy_search(step_fn, encoder_state, B, START, END, max_length=T)  # [h, c] alone
    expected = _until_end(REF["greedy_ids"])
    assert _until_end(to_numpy(result["ids"])) == expected
    assert to_numpy(result["lengths"]).tolist() == [len(row) for row in expected]
    assert any(len(row) < T for row in expected) and any(len(row) == T for row in expected)


def test_beam_search_from_the_encoder_state_matches_tfa(port):
    memory, encoder_state = port.encode(REF["source"])
    step_fn = make_step_fn(
        port.cell, port.decoder_embedding, port.dense_layer, memory, beam_width=K
    )
    result = beam_search(
        step_fn, encoder_state, B, START, END, max_length=T, beam_width=K, length_penalty=0.0
    )
    # tfa: predicted_ids [B, T, K], filled with END after the end; ours [B, K, T], filled with 0.
    tfa_ids = np.transpose(REF["beam_ids"], (0, 2, 1))
    ours = to_numpy(result["beam_ids"])
    lengths = to_numpy(result["beam_lengths"])
    np.testing.assert_array_equal(lengths, REF["beam_lengths"])
    for b in range(B):
        for k in range(K):
            n = lengths[b, k]
            assert ours[b, k, :n].tolist() == tfa_ids[b, k, :n].tolist()
            assert (ours[b, k, n:] == 0).all() and (tfa_ids[b, k, n:] == END).all()
    np.testing.assert_allclose(
        to_numpy(result["beam_scores"]), REF["beam_log_probs"], rtol=0, atol=1e-5
    )
    assert (REF["beam_lengths"] < T).any()  # some beam ended early: the fill differs there


def test_memory_tiled_by_hand_names_the_fix(port):
    memory, encoder_state = port.encode(REF["source"])
    tiled = ops.repeat(memory, K, axis=0)  # tfa's tile_batch(memory, K)
    step_fn = make_step_fn(port.cell, port.decoder_embedding, port.dense_layer, tiled, beam_width=K)
    with pytest.raises(ValueError, match="tile_batch") as error:
        beam_search(step_fn, encoder_state, B, START, END, max_length=T, beam_width=K)
    assert "make_step_fn(..., beam_width=K) repeats the memory" in str(error.value)

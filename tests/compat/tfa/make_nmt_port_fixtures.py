"""Write the fixtures of the tfa NMT tutorial port (run with real tfa, never by the tests).

TensorFlow Addons' own tutorial `docs/tutorials/networks_seq2seq_nmt.ipynb` (tensorflow/addons)
trains an English-German translator: an `EncoderNetwork` (`Embedding` + `LSTM` returning
sequences and states) and a `DecoderNetwork` (`Embedding`, `LSTMCell`, `LuongAttention` made with
`memory=None` and a constructor-time `memory_sequence_length`, `AttentionWrapper` with
`attention_layer_size`, `BasicDecoder` with a `TrainingSampler` and the `Dense` output layer),
trained with a hand-written `train_step`, then decoded greedily by driving
`BasicDecoder.initialize` / `step` by hand and with `BeamSearchDecoder` over `tile_batch`-ed
memory and state. This script builds the same two models (the tutorial's attribute names, so
the checkpoint's keys are those a user of the tutorial has) at tiny sizes on synthetic ids,
runs a few of the tutorial's training steps, moves every variable off its trained value (a
weight loaded into the wrong place cannot pass), and records what tfa computes.

It needs TensorFlow 2.15 and tensorflow-addons 0.23 in their own environment (see
make_tfa_fixtures.py):

    TF_CPP_MIN_LOG_LEVEL=2 /work/venv-tfa/bin/python tests/compat/tfa/make_nmt_port_fixtures.py

It writes `nmt_port/`:

- `checkpoint.index` / `checkpoint.data-00000-of-00001`:
  `tf.train.Checkpoint(encoder=encoder_network, decoder=decoder_network)`;
- `reference.npz`: `source` `[B, Tx]` (post-padded with 0, as the tutorial's `pad_sequences`),
  `target` `[B, Ty]`; `teacher_logits` `[B, Ty - 1, V]` (the training `BasicDecoder`'s
  `rnn_output` on `target[:, :-1]`); `greedy_ids` / `greedy_logits` `[B, T]` / `[B, T, V]`
  (the tutorial's hand-driven `initialize` / `step` loop with a `GreedyEmbeddingSampler`, `T`
  = `maximum_iterations`); `beam_ids` `[B, T, K]` (`BeamSearchDecoder`'s `predicted_ids`,
  `length_penalty_weight=0`) and `beam_log_probs` `[B, K]` (its final `log_probs`),
  `beam_lengths` `[B, K]`; the scalars `start`, `end`, `beam_width`, `max_iterations`;
- `MANIFEST.json`: versions, date, sizes.
"""

from __future__ import annotations

import datetime
import json
import pathlib

import numpy as np
import tensorflow as tf
import tensorflow_addons as tfa

OUT = pathlib.Path(__file__).resolve().parent / "fixtures" / "nmt_port"
BATCH, TX, TY = 3, 7, 6
INPUT_VOCAB, OUTPUT_VOCAB = 11, 13
EMBEDDING_DIMS, RNN_UNITS, DENSE_UNITS = 6, 8, 5
START, END = 1, 2
BEAM_WIDTH, MAX_ITERATIONS = 3, 9
SEED = 33
# Weight scales and END's bias, picked so that the rows decode to several different tokens,
# one greedy row and one beam end early and the others run to MAX_ITERATIONS.
WEIGHT_SCALE, KERNEL_SCALE, END_BIAS = 1.0, 2.0, 1.5


class EncoderNetwork(tf.keras.Model):
    def __init__(self, input_vocab_size, embedding_dims, rnn_units):
        super().__init__()
        self.encoder_embedding = tf.keras.layers.Embedding(input_vocab_size, embedding_dims)
        self.encoder_rnnlayer = tf.keras.layers.LSTM(
            rnn_units, return_sequences=True, return_state=True
        )


class DecoderNetwork(tf.keras.Model):
    def __init__(self, output_vocab_size, embedding_dims, rnn_units):
        super().__init__()
        self.decoder_embedding = tf.keras.layers.Embedding(output_vocab_size, embedding_dims)
        self.dense_layer = tf.keras.layers.Dense(output_vocab_size)
        self.decoder_rnncell = tf.keras.layers.LSTMCell(rnn_units)
        self.sampler = tfa.seq2seq.sampler.TrainingSampler()
        # As in the tutorial: memory=None and a constructor-time memory_sequence_length, which
        # tfa ignores (setup_memory(a) later has no lengths: the memory is not masked).
        self.attention_mechanism = tfa.seq2seq.LuongAttention(
            rnn_units, memory=None, memory_sequence_length=BATCH * [TX]
        )
        self.rnn_cell = tfa.seq2seq.AttentionWrapper(
            self.decoder_rnncell, self.attention_mechanism, attention_layer_size=DENSE_UNITS
        )
        self.decoder = tfa.seq2seq.BasicDecoder(
            self.rnn_cell, sampler=self.sampler, output_layer=self.dense_layer
        )

    def build_decoder_initial_state(self, batch_size, encoder_state, dtype):
        state = self.rnn_cell.get_initial_state(batch_size=batch_size, dtype=dtype)
        return state.clone(cell_state=encoder_state)


def _ids(rng, vocabulary, lengths, width):
    """Post-padded rows of ids in [3, vocabulary) framed by START ... END."""
    rows = np.zeros((len(lengths), width), "int32")
    for i, n in enumerate(lengths):
        rows[i, 0], rows[i, n - 1] = START, END
        rows[i, 1 : n - 1] = rng.integers(3, vocabulary, size=n - 2)
    return rows


def main():
    tf.random.set_seed(SEED)
    rng = np.random.default_rng(SEED)
    source = _ids(rng, INPUT_VOCAB, [TX, 5, 4], TX)
    target = _ids(rng, OUTPUT_VOCAB, [TY, 4, 5], TY)

    encoder = EncoderNetwork(INPUT_VOCAB, EMBEDDING_DIMS, RNN_UNITS)
    decoder = DecoderNetwork(OUTPUT_VOCAB, EMBEDDING_DIMS, RNN_UNITS)
    optimizer = tf.keras.optimizers.Adam(0.05)
    zeros = [tf.zeros((BATCH, RNN_UNITS)), tf.zeros((BATCH, RNN_UNITS))]

    def teacher_forced(source, target):
        a, a_tx, c_tx = encoder.encoder_rnnlayer(
            encoder.encoder_embedding(source), initial_state=zeros
        )
        decoder.attention_mechanism.setup_memory(a)
        state = decoder.build_decoder_initial_state(BATCH, [a_tx, c_tx], tf.float32)
        outputs, _, _ = decoder.decoder(
            decoder.decoder_embedding(target[:, :-1]),
            initial_state=state,
            sequence_length=BATCH * [TY - 1],
        )
        return outputs.rnn_output

    def loss_function(logits, y):  # the tutorial's masked loss
        loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")(
            y, logits
        )
        return tf.reduce_mean(tf.cast(tf.not_equal(y, 0), loss.dtype) * loss)

    # One of the tutorial's training steps (builds every variable and runs its train_step
    # path), then every variable set to fixed random values: deterministic, off any initializer,
    # so a weight loaded into the wrong place cannot pass.
    with tf.GradientTape() as tape:
        loss = loss_function(teacher_forced(source, target), target[:, 1:])
    variables = encoder.trainable_variables + decoder.trainable_variables
    optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
    for variable in sorted(variables, key=lambda v: v.name):
        variable.assign(rng.normal(scale=WEIGHT_SCALE, size=variable.shape).astype("float32"))
    # Logits driven by the attentional vector rather than by the bias, so that the tokens
    # change along the row.
    decoder.dense_layer.kernel.assign(
        rng.normal(scale=KERNEL_SCALE, size=decoder.dense_layer.kernel.shape).astype("float32")
    )
    decoder.dense_layer.bias.assign(np.zeros(decoder.dense_layer.bias.shape, "float32"))
    decoder.dense_layer.bias[END].assign(END_BIAS)

    record = {"source": source, "target": target}
    record["teacher_logits"] = teacher_forced(source, target).numpy()

    # Greedy, as the tutorial's evaluation cell: initialize / step driven by hand.
    a, a_tx, c_tx = encoder.encoder_rnnlayer(encoder.encoder_embedding(source), initial_state=zeros)
    greedy = tfa.seq2seq.BasicDecoder(
        decoder.rnn_cell,
        sampler=tfa.seq2seq.GreedyEmbeddingSampler(),
        output_layer=decoder.dense_layer,
    )
    decoder.attention_mechanism.setup_memory(a)
    state = decoder.build_decoder_initial_state(BATCH, [a_tx, c_tx], tf.float32)
    _, inputs, state = greedy.initialize(
        decoder.decoder_embedding.variables[0],
        start_tokens=tf.fill([BATCH], START),
        end_token=END,
        initial_state=state,
    )
    ids, logits = [], []
    for step in range(MAX_ITERATIONS):
        outputs, state, inputs, _ = greedy.step(step, inputs, state)
        ids.append(outputs.sample_id.numpy())
        logits.append(outputs.rnn_output.numpy())
    record["greedy_ids"] = np.stack(ids, axis=1)
    record["greedy_logits"] = np.stack(logits, axis=1)

    # Beam search as tfa requires it: memory and state tiled by hand.
    tiled_memory = tfa.seq2seq.tile_batch(a, multiplier=BEAM_WIDTH)
    decoder.attention_mechanism.setup_memory(tiled_memory)
    tiled_state = decoder.rnn_cell.get_initial_state(
        batch_size=BATCH * BEAM_WIDTH, dtype=tf.float32
    ).clone(cell_state=tfa.seq2seq.tile_batch([a_tx, c_tx], multiplier=BEAM_WIDTH))
    beam = tfa.seq2seq.BeamSearchDecoder(
        decoder.rnn_cell,
        beam_width=BEAM_WIDTH,
        output_layer=decoder.dense_layer,
        length_penalty_weight=0.0,
        maximum_iterations=MAX_ITERATIONS,
    )
    outputs, final_state, _ = beam(
        decoder.decoder_embedding.variables[0],
        start_tokens=tf.fill([BATCH], START),
        end_token=END,
        initial_state=tiled_state,
    )
    record["beam_ids"] = outputs.predicted_ids.numpy()
    record["beam_log_probs"] = final_state.log_probs.numpy()
    record["beam_lengths"] = final_state.lengths.numpy()
    record.update(start=START, end=END, beam_width=BEAM_WIDTH, max_iterations=MAX_ITERATIONS)

    OUT.mkdir(parents=True, exist_ok=True)
    np.savez(OUT / "reference.npz", **record)
    tf.train.Checkpoint(encoder=encoder, decoder=decoder).write(str(OUT / "checkpoint"))
    manifest = {
        "source": "tensorflow/addons docs/tutorials/networks_seq2seq_nmt.ipynb, ported at "
        "tiny sizes on synthetic ids",
        "tensorflow": tf.__version__,
        "tensorflow_addons": tfa.__version__,
        "date": datetime.date.today().isoformat(),
        "sizes": {
            "batch": BATCH,
            "tx": TX,
            "ty": TY,
            "input_vocab": INPUT_VOCAB,
            "output_vocab": OUTPUT_VOCAB,
            "embedding_dims": EMBEDDING_DIMS,
            "rnn_units": RNN_UNITS,
            "dense_units": DENSE_UNITS,
            "beam_width": BEAM_WIDTH,
            "max_iterations": MAX_ITERATIONS,
        },
        "variables": sorted(name for name, _ in tf.train.list_variables(str(OUT / "checkpoint"))),
    }
    (OUT / "MANIFEST.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print("greedy ids\n", record["greedy_ids"])
    print("beam ids [B, T, K]\n", record["beam_ids"].transpose(0, 2, 1))
    print("beam log probs\n", record["beam_log_probs"], record["beam_lengths"])


if __name__ == "__main__":
    main()

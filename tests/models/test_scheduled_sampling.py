"""Scheduled sampling: p = 0 is teacher forcing exactly, p = 1 feeds the model's own previous
output (against a hand loop), gradients skip the drawn ids, the callback's schedules, XLA fit,
saving, bad arguments."""

from __future__ import annotations

import math

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import AttentionRNN, LuongAttention, LuongAttentionCell
from keras_attention.models import ScheduledSampling, Seq2Seq
from tests.backend_utils import BACKEND, to_numpy, value_and_grad

V, B, T, S = 9, 3, 5, 4
JIT_COMPILE = BACKEND != "torch"  # torch.compile takes minutes on a CPU


@pytest.fixture(scope="module")
def decoder():
    """A built cell, embedding and output layer with NumPy-drawn weights; inputs."""
    rng = np.random.default_rng(0)
    cell = LuongAttentionCell(keras.layers.LSTMCell(8), LuongAttention("general"))
    embedding = keras.layers.Embedding(V, 4)
    dense = keras.layers.Dense(V)
    ids = rng.integers(1, V, (B, T)).astype("int32")
    memory = rng.normal(size=(B, S, 6)).astype("float32")
    AttentionRNN(cell)(embedding(ids), memory)
    dense.build((None, cell.output_size))
    for layer in (cell, embedding, dense):
        for w in layer.weights:
            w.assign(rng.normal(size=w.shape).astype("float32"))
    return cell, embedding, dense, ids, memory


def _run(decoder, p, mode="argmax", sampling_excluded_tokens=None, **call):
    cell, embedding, dense, ids, memory = decoder
    rnn = AttentionRNN(
        cell,
        sampling_probability=p,
        sampling_mode=mode,
        seed=3,
        sampling_excluded_tokens=sampling_excluded_tokens,
    )
    kwargs = {"training": True, "embedding": embedding, "output_layer": dense, **call}
    return to_numpy(rnn(embedding(ids), memory, **kwargs)), rnn


def _teacher_forced(cell, embedding, ids, memory, training=None):
    """Teacher forcing by the stepped cell (the loop scheduled sampling runs in), checked against
    the default layer, which takes the fused Luong path on TensorFlow and JAX (float32
    round-off apart)."""
    stepped = AttentionRNN(cell, implementation="stepped")
    want = to_numpy(stepped(embedding(ids), memory, training=training))
    default = to_numpy(AttentionRNN(cell)(embedding(ids), memory, training=training))
    np.testing.assert_allclose(default, want, rtol=1e-5, atol=1e-5)
    return want


def test_probability_zero_is_teacher_forcing_exactly(decoder):
    cell, embedding, dense, ids, memory = decoder
    teacher_forced = _teacher_forced(cell, embedding, ids, memory, training=True)
    for mode in ("sample", "argmax"):
        outputs, _ = _run(decoder, 0.0, mode)
        np.testing.assert_array_equal(outputs, teacher_forced)
    # Outside training the layer teacher-forces whatever p is.
    # (Outside training nothing is sampled: the layer takes the path a layer without sampling
    # takes, the fused one where it applies.)
    rnn = AttentionRNN(cell, sampling_probability=1.0, seed=3)
    outputs = rnn(embedding(ids), memory, training=False, embedding=embedding, output_layer=dense)
    default = AttentionRNN(cell)(embedding(ids), memory, training=False)
    np.testing.assert_array_equal(to_numpy(outputs), to_numpy(default))


def test_probability_one_feeds_the_models_own_output(decoder):
    """Against a hand loop: step 0 gets the ground truth, step t the argmax of step t-1."""
    cell, embedding, dense, ids, memory = decoder
    outputs, _ = _run(decoder, 1.0, "argmax")
    np.testing.assert_allclose(outputs, _hand_loop(decoder)[0], rtol=1e-5, atol=1e-6)
    teacher_forced = _teacher_forced(cell, embedding, ids, memory)
    np.testing.assert_array_equal(outputs[:, 0], teacher_forced[:, 0])
    assert np.abs(outputs[:, 1:] - teacher_forced[:, 1:]).max() > 1e-3


def test_sampled_mode_is_seeded_and_mixes_at_intermediate_probability(decoder):
    a, _ = _run(decoder, 1.0, "sample")
    b, _ = _run(decoder, 1.0, "sample")
    np.testing.assert_array_equal(a, b)  # the same layer seed
    assert np.all(np.isfinite(a))
    # p = 0.5: every row's step-1 output is the teacher-forced one or a fed-back one.
    cell, embedding, dense, ids, memory = decoder
    teacher_forced = _teacher_forced(cell, embedding, ids, memory)
    argmax_fed, _ = _run(decoder, 1.0, "argmax")
    half, _ = _run(decoder, 0.5, "argmax")
    for row in range(B):
        assert np.allclose(half[row, 1], teacher_forced[row, 1], atol=1e-6) or np.allclose(
            half[row, 1], argmax_fed[row, 1], atol=1e-6
        )


def _hand_loop(decoder, excluded=()):
    """p = 1, argmax: the argmax of step t - 1 over the ids not `excluded` feeds step t."""
    cell, embedding, dense, ids, memory = decoder
    prepared = cell.prepare_memory(ops.convert_to_tensor(memory))
    states = cell.get_initial_state(B)
    token, expected, fed = ids[:, 0], [], []
    for t in range(T):
        output, states, _ = cell.step(embedding(token), states, prepared, position=t)
        expected.append(to_numpy(output))
        logits = to_numpy(dense(output)).astype("float64")
        logits[:, list(excluded)] = -np.inf
        token = logits.argmax(-1).astype("int32")
        fed.append(token)
    return np.stack(expected, 1), np.stack(fed[:-1], 1)


def test_excluded_tokens_are_never_fed_back(decoder):
    """The argmax over the other ids (hand loop with -inf logits), never an excluded id."""
    _, fed = _hand_loop(decoder)
    # Exclude what the unrestricted argmax feeds most often, so the outputs must change.
    values, counts = np.unique(fed, return_counts=True)
    excluded = (0, int(values[counts.argmax()]))
    expected, fed = _hand_loop(decoder, excluded)
    assert not np.isin(fed, excluded).any()
    outputs, rnn = _run(decoder, 1.0, "argmax", sampling_excluded_tokens=list(excluded)[::-1])
    assert rnn.sampling_excluded_tokens == tuple(sorted(set(excluded)))
    np.testing.assert_allclose(outputs, expected, rtol=1e-5, atol=1e-6)
    unrestricted, _ = _run(decoder, 1.0, "argmax")
    assert np.abs(outputs - unrestricted).max() > 1e-3
    # Sampling among one allowed id feeds that id at every step t > 0: teacher forcing on
    # targets that hold it.
    cell, embedding, dense, ids, memory = decoder
    only = 5
    forced = ids.copy()
    forced[:, 1:] = only
    teacher_forced = _teacher_forced(cell, embedding, forced, memory)
    sampled, _ = _run(
        decoder, 1.0, "sample", sampling_excluded_tokens=[i for i in range(V) if i != only]
    )
    np.testing.assert_allclose(sampled, teacher_forced, rtol=1e-5, atol=1e-6)


def test_seq2seq_never_feeds_back_padding_or_start():
    model = Seq2Seq(12, 9, units=8, embedding_dim=4, start_id=4, end_id=5, sampling_probability=1.0)
    assert model.decoder.rnn_layer.sampling_excluded_tokens == (0, 4)
    assert Seq2Seq(12, 9, units=8, start_id=2, end_id=3).decoder.rnn_layer.sampling_excluded_tokens


def test_gradients_do_not_flow_through_the_drawn_ids(decoder):
    cell, embedding, dense, ids, memory = decoder
    rnn = AttentionRNN(cell, sampling_probability=1.0, sampling_mode="sample", seed=1)
    x = embedding(ids)
    rnn(x, memory)  # build

    def loss():
        outputs = rnn(
            embedding(ids), memory, training=True, embedding=embedding, output_layer=dense
        )
        return ops.sum(outputs**2)

    _, (grad_dense, grad_embedding) = value_and_grad(loss, [dense.kernel, embedding.embeddings])
    # The output layer is used only to draw the fed-back ids: no gradient reaches it.
    assert grad_dense is None or np.all(grad_dense == 0)
    # The embedding of the fed tokens (ground truth at t = 0, drawn ids later) gets gradients.
    assert np.abs(grad_embedding).sum() > 0


# ---------------------------------------------------------------- Seq2Seq, callback, XLA, saving
def _data(seed=0, batch=16):
    rng = np.random.default_rng(seed)
    src = rng.integers(4, 12, (batch, 6)).astype("int32")
    # Each target token follows from the previous one (a cycle through 4..8): what is fed
    # back matters to the loss.
    tgt = 4 + (rng.integers(0, 5, (batch, 1)) + np.arange(5)) % 5
    tgt = tgt.astype("int32")
    tgt[:, 0] = 2
    labels = np.concatenate([tgt[:, 1:], np.full((batch, 1), 3)], 1).astype("int32")
    return {"source_ids": src, "target_ids": tgt}, labels


def _fit_model(scheduled_sampling, callbacks=(), epochs=2, weights_from=None, jit=JIT_COMPILE):
    keras.utils.set_random_seed(0)
    model = Seq2Seq(12, 9, units=8, embedding_dim=4, sampling_probability=scheduled_sampling)
    model.build({"source_ids": (None, None), "target_ids": (None, None)})
    if weights_from is not None:  # the same architecture: the same trainable weights, in order
        for mine, theirs in zip(model.trainable_weights, weights_from, strict=True):
            mine.assign(theirs)
    model.compile(
        keras.optimizers.SGD(1.0, momentum=0.9),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=jit,
    )
    x, y = _data()
    history = model.fit(
        x, y, epochs=epochs, batch_size=8, shuffle=False, verbose=0, callbacks=list(callbacks)
    )
    return model, history.history


@pytest.mark.slow  # a compiled fit
def test_callback_changes_p_between_epochs_in_a_compiled_fit(tmp_path):
    keras.utils.set_random_seed(0)
    initial = Seq2Seq(12, 9, units=8, embedding_dim=4)
    initial.build({"source_ids": (None, None), "target_ids": (None, None)})
    initial = [to_numpy(w) for w in initial.trainable_weights]
    # p = 0 for three epochs (identical training: the model learns that each target token
    # follows from the one before), then p = 1: the loss leaves the plain run's.
    plain, plain_history = _fit_model(None, epochs=4, weights_from=initial, jit=False)
    callback = ScheduledSampling(lambda epoch: float(epoch >= 3))
    model, history = _fit_model(0.5, [callback], epochs=4, weights_from=initial)
    assert history["sampling_probability"] == [0.0, 0.0, 0.0, 1.0]
    assert float(to_numpy(model.sampling_probability)) == 1.0
    np.testing.assert_allclose(history["loss"][:3], plain_history["loss"][:3], rtol=1e-5)
    # The compiled step reads the variable (a p baked in at trace time would give the plain
    # run's loss to ~1e-7, as in epochs 0-2; p = 1 moves it by 1e-3 to 1.5e-2 per backend).
    assert abs(history["loss"][3] - plain_history["loss"][3]) > 1e-4

    x, _ = _data()
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras", safe_mode=True)
    assert float(to_numpy(loaded.sampling_probability)) == 1.0
    np.testing.assert_allclose(to_numpy(loaded(x)), to_numpy(model(x)), rtol=1e-6)
    assert loaded.get_config() == model.get_config()
    assert plain.sampling_probability is None
    assert "sampling_probability" not in plain.get_config()  # older configs are unchanged


def test_schedules():
    inverse_sigmoid = ScheduledSampling("inverse_sigmoid", k=3.0)
    assert [round(inverse_sigmoid.probability(i), 6) for i in (0, 3)] == [
        round(1 - 3 / (3 + 1), 6),
        round(1 - 3 / (3 + math.e), 6),
    ]
    assert ScheduledSampling("linear", slope=0.3).probability(5) == 1.0
    assert ScheduledSampling("linear", slope=0.3, max_probability=0.5).probability(1) == 0.3
    assert ScheduledSampling("exponential", k=0.5).probability(2) == 0.75
    increasing = [inverse_sigmoid.probability(i) for i in range(20)]
    assert all(a < b for a, b in zip(increasing, increasing[1:]))


def test_layer_config_round_trip(decoder):
    cell = decoder[0]
    rnn = AttentionRNN(cell, sampling_probability=0.25, sampling_mode="argmax", seed=4)
    config = rnn.get_config()
    assert (config["sampling_probability"], config["sampling_mode"], config["seed"]) == (
        0.25,
        "argmax",
        4,
    )
    again = AttentionRNN.from_config(config)
    assert again.get_config() == config
    assert "sampling_probability" not in AttentionRNN(cell).get_config()
    assert "sampling_excluded_tokens" not in config  # (older configs stay identical)
    excluding = AttentionRNN(cell, sampling_probability=0.5, sampling_excluded_tokens=[2, 0])
    config = excluding.get_config()
    assert config["sampling_excluded_tokens"] == [0, 2]
    assert AttentionRNN.from_config(config).sampling_excluded_tokens == (0, 2)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"sampling_probability": 1.5}, "sampling_probability=1.5"),
        ({"sampling_probability": "high"}, "sampling_probability='high'"),
        ({"sampling_probability": 0.5, "sampling_mode": "beam"}, "sampling_mode='beam'"),
        ({"sampling_excluded_tokens": [0, -1]}, r"sampling_excluded_tokens=\[0, -1\]"),
        ({"sampling_excluded_tokens": 2}, "sampling_excluded_tokens=2"),
        ({"sampling_excluded_tokens": [True]}, r"sampling_excluded_tokens=\[True\]"),
    ],
)
def test_bad_layer_arguments(decoder, kwargs, match):
    with pytest.raises(ValueError, match=match):
        AttentionRNN(decoder[0], **kwargs)


def test_bad_model_and_callback_arguments(decoder):
    cell, embedding, dense, ids, memory = decoder
    rnn = AttentionRNN(cell, sampling_probability=0.5)
    with pytest.raises(ValueError, match="embedding=None"):
        rnn(embedding(ids), memory, training=True, output_layer=dense)
    with pytest.raises(ValueError, match="sampling_probability=2"):
        Seq2Seq(12, 9, units=8, sampling_probability=2)
    with pytest.raises(ValueError, match="sampling_mode='top'"):
        Seq2Seq(12, 9, units=8, sampling_probability=0.1, sampling_mode="top")
    with pytest.raises(ValueError, match="schedule='cosine'"):
        ScheduledSampling("cosine")
    with pytest.raises(ValueError, match="k=0.5"):
        ScheduledSampling("inverse_sigmoid", k=0.5)
    with pytest.raises(ValueError, match="max_probability=2"):
        ScheduledSampling(max_probability=2)
    model = Seq2Seq(12, 9, units=8, embedding_dim=4)
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = _data(batch=2)
    with pytest.raises(ValueError, match="no `sampling_probability` variable"):
        model.fit(x, y, epochs=1, verbose=0, callbacks=[ScheduledSampling()])

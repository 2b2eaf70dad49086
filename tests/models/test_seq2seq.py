"""The seq2seq builder: training graph vs decoding graph, masking, variants, saving, errors."""

from __future__ import annotations

import json

import keras
import numpy as np
import pytest

from keras_attention.decoding import BeamSearch
from keras_attention.models import Seq2Seq, Seq2SeqDecoder, Seq2SeqEncoder, Translator
from tests.backend_utils import BACKEND, to_numpy

V_SRC, V_TGT = 13, 11
# XLA on TensorFlow and JAX; on PyTorch `jit_compile=True` is torch.compile (Inductor, minutes
# per model on a CPU) for `fit`, and an error for `Translator`: there both run eagerly.
JIT_COMPILE = BACKEND != "torch"
START, END = 2, 3

VARIANTS = {
    "luong_general_global": {},
    "luong_dot_local_m_gru_copy": {
        "score_mode": "dot",
        "alignment": "local_monotonic",
        "window_radius": 2,
        "rnn": "gru",
        "bidirectional": False,
        "state_handover": "copy",
    },
    "luong_concat_local_p_no_feeding": {
        "score_mode": "concat",
        "alignment": "local_predictive",
        "window_radius": 2,
        "input_feeding": False,
        "score_units": 6,
    },
    "bahdanau_gru_two_layers": {
        "attention": "bahdanau",
        "rnn": "gru",
        "decoder_num_layers": 2,
        "encoder_num_layers": 2,
    },
    "bahdanau_lstm_no_handover": {"attention": "bahdanau", "state_handover": "none"},
}


@pytest.fixture(autouse=True)
def _seed():
    keras.utils.set_random_seed(0)


def _model(**kwargs):
    options = {"embedding_dim": 8, "units": 12, **kwargs}
    return Seq2Seq(V_SRC, V_TGT, **options)


def _data(seed, batch=6, source=7, target=6):
    """Source rows end with END then padding; targets start with START, padded with 0."""
    rng = np.random.default_rng(seed)
    src = np.zeros((batch, source), "int32")
    tgt = np.zeros((batch, target), "int32")
    for i in range(batch):
        n = source - 1 if i == 0 else rng.integers(1, source)
        src[i, :n] = rng.integers(4, V_SRC, n)
        src[i, n] = END
        m = target if i == 0 else rng.integers(1, target + 1)
        tgt[i, :m] = rng.integers(4, V_TGT, m)
        tgt[i, 0] = START
    return src, tgt


def _log_softmax(x, decodable_only=False):
    """log-softmax; over the tokens decoding may produce (never 0 = padding, never START)
    when `decodable_only`."""
    x = x.copy()
    if decodable_only:
        x[..., [0, START]] = -np.inf
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


@pytest.mark.parametrize("variant", VARIANTS, ids=list(VARIANTS))
def test_greedy_decoding_replays_the_training_graph(variant):
    """Feeding the greedy output back teacher-forced gives the logits the search chose from:
    the step path (prepare_memory, hand-over, cell.step) is the training path."""
    model = _model(**VARIANTS[variant])
    src, _ = _data(1)
    result = Translator(model, max_length=6, jit_compile=False)(src)
    ids, lengths = result["ids"], result["lengths"]
    target_in = np.concatenate([np.full((len(src), 1), START), ids[:, :-1]], axis=1)
    valid = np.arange(6)[None, :] < lengths[:, None]
    target_in[:, 1:][~valid[:, :-1]] = 0  # nothing after the end token
    logits = to_numpy(model({"source_ids": src, "target_ids": target_in}))
    log_probs = _log_softmax(logits.astype("float64"), decodable_only=True)
    np.testing.assert_array_equal(log_probs.argmax(-1)[valid], ids[valid])
    chosen = np.take_along_axis(log_probs, ids[..., None], -1)[..., 0]
    np.testing.assert_allclose(
        np.where(valid, chosen, 0).sum(1), result["scores"], rtol=1e-4, atol=1e-4
    )
    # Alignments: a distribution over the valid source positions at every generated step
    # (local-p's Gaussian factor makes the sum less than one).
    alignments = result["alignments"]
    source_valid = src != 0
    if VARIANTS[variant].get("alignment") == "local_predictive":
        assert np.all(alignments.sum(-1)[valid] <= 1.0 + 1e-6)
        assert np.all(alignments.sum(-1)[valid] > 0.0)
    else:
        np.testing.assert_allclose(alignments.sum(-1)[valid], 1.0, atol=1e-5)
    assert np.all(alignments[~valid] == 0.0)
    assert np.all(np.where(source_valid[:, None, :], 0.0, alignments) == 0.0)


def test_logits_carry_the_target_mask_so_padding_never_counts():
    model = _model()
    model.compile(
        "adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    src, tgt = _data(2)
    labels = np.concatenate([tgt[:, 1:], np.zeros((len(tgt), 1), "int32")], axis=1)
    labels[tgt == 0] = 0
    x = {"source_ids": src, "target_ids": tgt}
    loss, acc = model.evaluate(x, labels, verbose=0)
    # Padding on both sides (and garbage labels under the padding) changes nothing.
    padded_x = {
        "source_ids": np.pad(src, ((0, 0), (0, 3))),
        "target_ids": np.pad(tgt, ((0, 0), (0, 4))),
    }
    padded_labels = np.pad(labels, ((0, 0), (0, 4)), constant_values=7)
    padded_labels[np.pad(tgt, ((0, 0), (0, 4))) == 0] = 7
    loss_p, acc_p = model.evaluate(padded_x, padded_labels, verbose=0)
    np.testing.assert_allclose(loss_p, loss, rtol=1e-5)
    np.testing.assert_allclose(acc_p, acc, rtol=1e-5)
    # The masked mean by hand.
    logits = to_numpy(model(x)).astype("float64")
    nll = -np.take_along_axis(_log_softmax(logits), labels[..., None], -1)[..., 0]
    np.testing.assert_allclose(loss, nll[tgt != 0].mean(), rtol=1e-4)


# Two variants run in CI's slow suite only (`make test-extended`): `make test` stays within its
# time; the fused Luong decoder, local-m, GRU, two layers and Bahdanau stay in the quick one.
SLOW_VARIANTS = ("luong_concat_local_p_no_feeding", "bahdanau_lstm_no_handover")


@pytest.mark.parametrize(
    "variant",
    [pytest.param(v, marks=pytest.mark.slow) if v in SLOW_VARIANTS else v for v in VARIANTS],
    ids=list(VARIANTS),
)
def test_xla_fit_generate_and_keras_round_trip(variant, tmp_path):
    model = _model(**VARIANTS[variant])
    src, tgt = _data(3, batch=10)
    labels = np.concatenate([tgt[:, 1:], np.zeros((len(tgt), 1), "int32")], axis=1)
    model.compile(
        "adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=JIT_COMPILE,
    )
    # Batches of 4, 4, 2: a dynamic batch size inside the compiled while-loop gradient.
    history = model.fit({"source_ids": src, "target_ids": tgt}, labels, batch_size=4, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    # The compiled Translator against eager `generate` (what it traces), and the reloaded model
    # eagerly (tracing a Translator costs seconds a variant: the uncompiled one is
    # test_compiled_translator_sees_weights_changed_after_compiling's).
    search = BeamSearch(2, max_length=5)
    eager = {k: to_numpy(v) for k, v in model.generate(src, search).items()}
    jitted = Translator(model, search, jit_compile=JIT_COMPILE)(src)
    np.testing.assert_array_equal(jitted["ids"], eager["ids"])
    np.testing.assert_allclose(jitted["scores"], eager["scores"], rtol=1e-5, atol=1e-5)

    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras", safe_mode=True)
    x = {"source_ids": src, "target_ids": tgt}
    np.testing.assert_array_equal(to_numpy(loaded(x)), to_numpy(model(x)))
    again = to_numpy(loaded.generate(src, search)["ids"])
    np.testing.assert_array_equal(again, eager["ids"])
    assert loaded.get_config() == model.get_config()


def test_config_is_json_and_round_trips():
    model = _model(**VARIANTS["bahdanau_gru_two_layers"], dropout=0.1, name="s2s")
    config = model.get_config()
    json.dumps(config)
    clone = Seq2Seq.from_config(config)
    assert clone.get_config() == config
    for layer in (model.encoder, model.decoder):
        layer_config = layer.get_config()
        assert type(layer).from_config(layer_config).get_config() == layer_config


def test_hyperparameters_accept_what_keras_tuner_gives():
    # hp.Choice([True, False]) gives 0/1 and hp.Int numpy ints.
    model = Seq2Seq(
        np.int64(V_SRC),
        V_TGT,
        units=np.int64(8),
        embedding_dim=8,
        input_feeding=0,
        bidirectional=1,
    )
    assert model.decoder.input_feeding is False and model.encoder.bidirectional is True


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"units": 0}, "units"),
        ({"units": 2.5}, "units"),
        ({"embedding_dim": -1}, "embedding_dim"),
        ({"rnn": "transformer"}, "rnn"),
        ({"attention": "dot"}, "attention"),
        ({"score_mode": "cosine"}, "score_mode"),
        ({"alignment": "local"}, "alignment"),
        ({"state_handover": "zero"}, "state_handover"),
        ({"dropout": 1.0}, "dropout"),
        ({"encoder_num_layers": 0}, "num_layers"),
        ({"end_id": V_TGT}, "end_id"),
        ({"score_mode": "dot"}, r"units=128, encoder_units=128, bidirectional=True"),
        ({"encoder_units": 0}, "encoder_units"),
        ({"start_id": -1}, "start_id"),
    ],
)
def test_bad_hyperparameters_name_the_argument(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Seq2Seq(V_SRC, V_TGT, **kwargs)


def test_vocabulary_sizes_are_required_without_tokenizers():
    with pytest.raises(ValueError, match="source_vocabulary_size"):
        Seq2Seq(None, V_TGT)


def test_copy_handover_needs_matching_sizes():
    model = _model(state_handover="copy")  # bidirectional: the encoder's states are 2 * 12
    src, tgt = _data(4)
    with pytest.raises(ValueError, match="state_handover='copy'"):
        model({"source_ids": src, "target_ids": tgt})


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"max_length": 0}, ValueError, "max_length"),
        ({"beam_width": 0}, ValueError, "beam_width"),
        ({"pad_to_multiple": 0}, ValueError, "pad_to_multiple"),
        ({"jit_compile": "xla"}, ValueError, "jit_compile='xla'"),
        ({"sample": True, "beam_width": 2}, ValueError, "beam_width=2"),
        ({"sample": "yes"}, ValueError, "sample='yes'"),
        ({"temperature": 0}, ValueError, "temperature=0"),
        ({"top_k": 0}, ValueError, "top_k=0"),
        ({"top_p": 1.5}, ValueError, "top_p=1.5"),
        ({"top_k": 5}, ValueError, "top_k=5 with sample=False"),
        ({"temperature": 0.8}, ValueError, "pass sample=True.*temperature=0.8"),
        ({"seed": -1}, ValueError, "seed=-1"),
        ({"coverage_penalty": -1.0}, ValueError, "coverage_penalty=-1.0"),
    ],
)
def test_translator_rejects_bad_settings(kwargs, error, message):
    with pytest.raises(error, match=message):
        Translator(_model(), **kwargs)


def test_translator_jit_compile_per_backend():
    """`"auto"` compiles with XLA on TensorFlow and JAX; `True` on PyTorch names the backend."""
    assert Translator(_model()).jit_compile is (BACKEND in ("tensorflow", "jax"))
    if BACKEND == "torch":
        with pytest.raises(ValueError, match="backend is 'torch'.*jit_compile=True"):
            Translator(_model(), jit_compile=True)
    else:
        assert Translator(_model(), jit_compile=True).jit_compile is True


def test_compiled_translator_sees_weights_changed_after_compiling():
    """The compiled search reads the current weights (on JAX they are arguments of the jitted
    function, not constants baked in at the first call)."""
    model = _model()
    src, _ = _data(7)
    translator = Translator(model, max_length=4)
    before = translator(src)["ids"]
    bias = np.zeros(V_TGT, "float32")
    bias[5] = 1e4  # token 5 now always wins
    model.decoder.projection.bias.assign(bias)
    after = translator(src)["ids"]
    np.testing.assert_array_equal(after, np.full_like(after, 5))
    assert not np.array_equal(before, after)
    eager = Translator(model, max_length=4, jit_compile=False)(src)["ids"]
    np.testing.assert_array_equal(after, eager)


def test_translator_input_checks():
    translator = Translator(_model(), max_length=4, jit_compile=False)
    with pytest.raises(TypeError, match="model"):
        Translator(keras.Sequential())
    with pytest.raises(ValueError, match="source_ids"):
        translator(np.zeros((2, 3, 1), "int32"))
    with pytest.raises(ValueError, match=r"\[0, 13\)"):
        translator(np.array([[4, V_SRC]]))
    with pytest.raises(ValueError, match="tokenizers"):
        translator.translate(["abc"])
    empty = translator(np.zeros((0, 5), "int32"))
    assert empty["ids"].shape == (0, 4)


def test_padding_the_source_changes_nothing():
    model = _model(alignment="local_predictive", window_radius=2)
    src, _ = _data(5)
    translator = Translator(model, max_length=5, jit_compile=False, pad_to_multiple=1)
    plain = translator(src)
    padded = translator(np.pad(src, ((0, 0), (0, 9))))
    np.testing.assert_array_equal(padded["ids"], plain["ids"])
    np.testing.assert_allclose(
        padded["alignments"][..., : src.shape[1]], plain["alignments"], atol=1e-6
    )
    assert np.all(padded["alignments"][..., src.shape[1] :] == 0.0)


def test_encoder_and_decoder_shapes():
    encoder = Seq2SeqEncoder(V_SRC, 8, 5, rnn="gru", num_layers=2)
    src, tgt = _data(6)
    memory, mask, states = encoder(src)
    assert tuple(memory.shape) == (6, 7, 10) and len(states) == 1
    np.testing.assert_array_equal(to_numpy(mask), src != 0)
    decoder = Seq2SeqDecoder(V_TGT, 8, 12, attention="bahdanau")
    logits, alignments = decoder(
        tgt, memory, memory_mask=mask, encoder_states=states + states, return_attention_scores=True
    )
    assert tuple(logits.shape) == (6, 6, V_TGT) and tuple(alignments.shape) == (6, 6, 7)


def test_translator_sampling_seeds_and_compiled_equals_eager():
    model = _model()
    src, _ = _data(8)
    options = {"max_length": 5, "sample": True, "temperature": 1.5, "top_k": 6, "top_p": 0.95}
    eager = Translator(model, jit_compile=False, **options)
    np.testing.assert_array_equal(eager(src, seed=4)["ids"], eager(src, seed=4)["ids"])
    assert not np.array_equal(eager(src, seed=4)["ids"], eager(src, seed=5)["ids"])
    # A Translator's seed fixes its stream of per-call seeds.
    a, b = (Translator(model, jit_compile=False, seed=9, **options) for _ in range(2))
    first, second = a(src)["ids"], a(src)["ids"]
    np.testing.assert_array_equal(b(src)["ids"], first)
    np.testing.assert_array_equal(b(src)["ids"], second)
    assert not np.array_equal(first, second)
    # The scores are the model's log-probabilities of the drawn tokens (checked against the
    # teacher-forced logits, as for greedy decoding).
    result = eager(src, seed=4)
    ids, lengths = result["ids"], result["lengths"]
    target_in = np.concatenate([np.full((len(src), 1), START), ids[:, :-1]], axis=1)
    valid = np.arange(5)[None, :] < lengths[:, None]
    target_in[:, 1:][~valid[:, :-1]] = 0
    logits = to_numpy(model({"source_ids": src, "target_ids": target_in}))
    log_probs = _log_softmax(logits.astype("float64"), decodable_only=True)
    chosen = np.take_along_axis(log_probs, ids[..., None], -1)[..., 0]
    np.testing.assert_allclose(
        np.where(valid, chosen, 0).sum(1), result["scores"], rtol=1e-4, atol=1e-4
    )


@pytest.mark.slow  # an XLA compilation of the search
@pytest.mark.skipif(not JIT_COMPILE, reason="XLA needs TensorFlow or JAX")
def test_compiled_sampling_translator_equals_eager():
    model = _model()
    src, _ = _data(8)
    options = {"max_length": 5, "sample": True, "top_k": 6, "top_p": 0.95}
    compiled = Translator(model, jit_compile=True, **options)(src, seed=4)
    eager = Translator(model, jit_compile=False, **options)(src, seed=4)
    np.testing.assert_array_equal(compiled["ids"], eager["ids"])
    np.testing.assert_allclose(compiled["scores"], eager["scores"], rtol=1e-5, atol=1e-5)


def test_generate_and_n_best_argument_checks():
    model = _model()
    src, _ = _data(9)
    with pytest.raises(ValueError, match="beam_width=3"):
        model.generate(src, max_length=4, beam_width=3, sample=True)
    # Sampling options without sample=True would be ignored by greedy and beam search.
    with pytest.raises(ValueError, match=r"`top_p` applies to sampling only.*top_p=0.9"):
        model.generate(src, max_length=4, beam_width=2, top_p=0.9)
    translator = Translator(model, max_length=4, beam_width=2, jit_compile=False)
    with pytest.raises(ValueError, match="n_best=3"):
        translator.translate(["abc"], n_best=3)
    with pytest.raises(ValueError, match="n_best=0"):
        translator.translate(["abc"], n_best=0)
    with pytest.raises(ValueError, match="seed=-2"):
        translator(src, seed=-2)
    result = Translator(model, max_length=4, beam_width=3, coverage_penalty=0.5, jit_compile=False)(
        src
    )
    assert result["beam_ids"].shape == (len(src), 3, 4)
    assert np.all(np.diff(result["beam_normalized_scores"], axis=1) <= 1e-6)
    empty = translator(np.zeros((0, 5), "int32"))
    assert empty["beam_ids"].shape == (0, 2, 4)


def test_translator_picks_the_top_k_method_of_its_compiler():
    """TF without XLA: ops.top_k (TF's TopKV2 is a partial sort); with XLA, or elsewhere: the
    search's "auto" (bisection on TensorFlow, where XLA makes ops.top_k a full sort)."""
    import keras

    from keras_attention.models import Translator

    model = Seq2Seq(12, 9, units=8)
    plain = Translator(model, max_length=3, sample=True, top_k=2, jit_compile=False)
    expected = "sort" if keras.backend.backend() == "tensorflow" else "auto"
    assert plain.top_k_method == expected
    if keras.backend.backend() in ("tensorflow", "jax"):
        assert Translator(model, max_length=3, sample=True, jit_compile=True).top_k_method == "auto"

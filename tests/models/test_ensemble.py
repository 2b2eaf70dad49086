"""Seq2SeqEnsemble: the mean of the members' probabilities, teacher-forced and in the searches,
against a float64 NumPy transcription; saving; errors."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from keras_attention.models import Seq2Seq, Seq2SeqEnsemble, Translator
from tests.backend_utils import BACKEND, to_numpy

V_SRC, V_TGT = 13, 11
START, END = 2, 3
JIT_COMPILE = BACKEND != "torch"  # as in test_seq2seq: Translator has no XLA on PyTorch


@pytest.fixture(scope="module")
def members():
    keras.utils.set_random_seed(0)
    luong = Seq2Seq(V_SRC, V_TGT, embedding_dim=8, units=12)
    bahdanau = Seq2Seq(V_SRC, V_TGT, embedding_dim=6, units=10, rnn="gru", attention="bahdanau")
    return [luong, bahdanau]


def _source():
    return np.array([[5, 6, 7, 8, END], [4, 9, END, 0, 0], [12, END, 0, 0, 0]], "int32")


def _reference_log_probabilities(logits, decodable_only=False):
    """float64 NumPy: log((1 / M) * sum_m softmax(logits_m)), optionally over the tokens a
    search may produce (never 0 = padding, never START)."""
    probabilities = []
    for x in logits:
        x = x.astype("float64").copy()
        if decodable_only:
            x[..., [0, START]] = -np.inf
        x = np.exp(x - x.max(-1, keepdims=True))
        probabilities.append(x / x.sum(-1, keepdims=True))
    with np.errstate(divide="ignore"):  # log(0) = -inf for the tokens never produced
        return np.log(np.mean(probabilities, axis=0))


def test_teacher_forced_output_is_the_log_of_the_mean_probability(members):
    source = _source()
    target = np.array([[START, 4, 5, 6], [START, 7, 0, 0], [START, 8, 9, 0]], "int32")
    inputs = {"source_ids": source, "target_ids": target}
    ensemble = Seq2SeqEnsemble(members)
    expected = _reference_log_probabilities([to_numpy(m(inputs)) for m in members])
    np.testing.assert_allclose(to_numpy(ensemble(inputs)), expected, rtol=1e-5, atol=1e-5)


def test_greedy_search_replays_the_mean_probabilities_teacher_forced(members):
    """Feeding the ensemble's greedy output back to each member teacher-forced gives the
    distributions the search chose from: every id is the float64 argmax of the members' mean
    probability, and the score is the sum of the chosen log-probabilities."""
    ensemble = Seq2SeqEnsemble(members)
    source = _source()
    result = Translator(ensemble, max_length=6, jit_compile=False)(source)
    ids, lengths = result["ids"], result["lengths"]
    target_in = np.concatenate([np.full((len(source), 1), START), ids[:, :-1]], axis=1)
    valid = np.arange(6)[None, :] < lengths[:, None]
    target_in[:, 1:][~valid[:, :-1]] = 0
    inputs = {"source_ids": source, "target_ids": target_in}
    log_probs = _reference_log_probabilities(
        [to_numpy(m(inputs)) for m in members], decodable_only=True
    )
    np.testing.assert_array_equal(log_probs.argmax(-1)[valid], ids[valid])
    chosen = np.take_along_axis(log_probs, ids[..., None], -1)[..., 0]
    np.testing.assert_allclose(
        np.where(valid, chosen, 0).sum(1), result["scores"], rtol=1e-4, atol=1e-4
    )
    # The attention weights: the members' mean, a distribution over the valid positions.
    np.testing.assert_allclose(result["alignments"].sum(-1)[valid], 1.0, atol=1e-5)
    assert np.all(np.where(source[:, None, :] != 0, 0.0, result["alignments"]) == 0.0)


def test_copies_of_one_model_decode_as_that_model(members, beam_width=3):
    """The mean of identical distributions is that distribution: an ensemble of a model and
    its copy (and of the model alone) finds the model's own hypotheses and scores, through
    the beam search's reordering of the members' states."""
    model = members[0]
    copy = Seq2Seq.from_config(model.get_config())
    copy.set_weights(model.get_weights())
    source = _source()
    alone = Translator(model, max_length=6, beam_width=beam_width, jit_compile=False)(source)
    for ensemble in (Seq2SeqEnsemble([model, copy]), Seq2SeqEnsemble([model])):
        both = Translator(ensemble, max_length=6, beam_width=beam_width, jit_compile=False)(source)
        np.testing.assert_array_equal(both["ids"], alone["ids"])
        np.testing.assert_allclose(both["scores"], alone["scores"], rtol=1e-5, atol=1e-5)


@pytest.mark.slow
@pytest.mark.skipif(not JIT_COMPILE, reason="Translator compiles with XLA on TF and JAX only")
def test_compiled_beam_search_finds_the_eager_hypotheses(members):
    ensemble = Seq2SeqEnsemble(members)
    source = _source()
    eager = Translator(ensemble, max_length=6, beam_width=3, jit_compile=False)(source)
    compiled = Translator(ensemble, max_length=6, beam_width=3, jit_compile=True)(source)
    np.testing.assert_array_equal(compiled["ids"], eager["ids"])
    np.testing.assert_allclose(compiled["scores"], eager["scores"], rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_the_keras_file_reloads_the_members_and_their_weights(members, tmp_path):
    ensemble = Seq2SeqEnsemble(members)
    source = _source()
    before = Translator(ensemble, max_length=6, beam_width=2, jit_compile=False)(source)
    path = tmp_path / "ensemble.keras"
    ensemble.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, Seq2SeqEnsemble) and len(loaded.members) == 2
    assert [type(m).__name__ for m in loaded.members] == ["Seq2Seq", "Seq2Seq"]
    after = Translator(loaded, max_length=6, beam_width=2, jit_compile=False)(source)
    np.testing.assert_array_equal(after["ids"], before["ids"])
    np.testing.assert_allclose(after["scores"], before["scores"], rtol=1e-6)


def test_bad_members_are_refused_by_name(members):
    with pytest.raises(ValueError, match=r"Received: members=\[\]"):
        Seq2SeqEnsemble([])
    with pytest.raises(ValueError, match="non-empty list of Seq2Seq"):
        Seq2SeqEnsemble(members[0])
    with pytest.raises(TypeError, match=r"Received: members\[1\]="):
        Seq2SeqEnsemble([members[0], keras.Sequential()])
    other = Seq2Seq(V_SRC, V_TGT + 1, embedding_dim=4, units=4)
    with pytest.raises(ValueError, match=r"share `target_vocabulary_size`.*members\[1\]"):
        Seq2SeqEnsemble([members[0], other])
    ends = Seq2Seq(V_SRC, V_TGT, embedding_dim=4, units=4, end_id=4)
    with pytest.raises(ValueError, match=r"share `end_id`.*members\[0\].end_id=3"):
        Seq2SeqEnsemble([members[0], ends])

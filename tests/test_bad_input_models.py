"""Bad input to `keras_attention.models`: a clear error or a documented result.

Extends tests/models/test_seq2seq.py. Documented results: an empty batch gives empty logits
/ empty search results; a source with no steps (S = 0) is read as one padding step, i.e. an
all-padding source (`generate` then returns `[B, max_length, 0]` alignments, as `Translator`
does); a target with no steps gives `[B, 0, V]` logits. Token ids are checked where they are
host data (NumPy arrays or lists given to the model, `fit`/`predict`/..., `generate` or a
`Translator`); ids in backend tensors are not read back: there an out-of-vocabulary id embeds
as a zero vector on every backend, or becomes `oov_id` (tests/models/test_out_of_vocabulary.py).
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention.decoding import BeamSearch, GreedySearch, beam_search, greedy_search
from keras_attention.models import Seq2Seq, Seq2SeqDecoder, Seq2SeqEncoder, Translator

V_SRC, V_TGT = 13, 11
SRC = np.array([[4, 5, 3, 0], [6, 3, 0, 0]], "int32")
TGT = np.array([[2, 4, 5], [2, 6, 0]], "int32")


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(0)
    model = Seq2Seq(V_SRC, V_TGT, embedding_dim=8, units=12)
    model({"source_ids": SRC, "target_ids": TGT})
    return model


def _np(x):
    return np.asarray(ops.convert_to_numpy(x))


# ---------------------------------------------------------------- constructor arguments
@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: Seq2Seq(V_SRC, V_TGT, window_radius=2.5), r"window_radius=2\.5"),
        (lambda: Seq2Seq(V_SRC, V_TGT, window_radius="3"), "window_radius='3'"),
        (lambda: Seq2Seq(V_SRC, V_TGT, bidirectional="no"), "bidirectional='no'"),
        (lambda: Seq2Seq(V_SRC, V_TGT, input_feeding=None), "input_feeding=None"),
        (lambda: Seq2Seq(V_SRC, V_TGT, start_id=0), "start_id=0"),
        (lambda: Seq2Seq(V_SRC, V_TGT, end_id=0), "end_id=0"),
        (lambda: Seq2Seq(V_SRC, V_TGT, start_id=V_TGT), "start_id=11"),
        (lambda: Seq2Seq(V_SRC, V_TGT, start_id=2.0), r"start_id=2\.0"),
        (lambda: Seq2Seq(V_SRC, V_TGT, score_units=True), "score_units=True"),
        (lambda: Seq2Seq(V_SRC, V_TGT, embedding_dim=None), "embedding_dim=None"),
        (lambda: Seq2Seq(V_SRC, V_TGT, decoder_num_layers="2"), "num_layers='2'"),
        (lambda: Seq2Seq(V_SRC, 0), "target_vocabulary_size=0"),
        (lambda: Seq2Seq("13", V_TGT), "source_vocabulary_size='13'"),
        (lambda: Seq2Seq(V_SRC, V_TGT, dropout=None), "dropout=None"),
        (lambda: Seq2Seq(V_SRC, V_TGT, oov_id=V_TGT), r"\[0, 11\).*oov_id=11"),
        (lambda: Seq2Seq(V_SRC, V_TGT, oov_id=-1), "oov_id=-1"),
        (lambda: Seq2Seq(V_SRC, V_TGT, oov_id=True), "oov_id=True"),
        (lambda: Seq2Seq(V_SRC, V_TGT, oov_id=1.0), r"oov_id=1\.0"),
        (lambda: Seq2SeqEncoder(0, 4, 4), "vocabulary_size=0"),
        (lambda: Seq2SeqEncoder(5, 4, 4, rnn=None), "rnn=None"),
        (lambda: Seq2SeqDecoder(5, 4, 4, window_radius=-1), "window_radius=-1"),
        (lambda: Seq2SeqDecoder(5, 4, 4, score_mode="bogus"), "score_mode='bogus'"),
        (lambda: Seq2SeqDecoder(5, 4, 4, alignment=None), "alignment=None"),
        (lambda: Seq2SeqDecoder(5, 4, 4, state_handover=1), "state_handover=1"),
    ],
)
def test_bad_constructor_argument(make, match):
    with pytest.raises(ValueError, match=match):
        make()


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"length_penalty": float("nan")}, ValueError, "length_penalty=nan"),
        ({"length_penalty": "x"}, ValueError, "length_penalty='x'"),
        ({"max_length": None}, ValueError, "max_length=None"),
        ({"pad_to_multiple": True}, ValueError, "pad_to_multiple=True"),
    ],
)
def test_bad_translator_argument(model, kwargs, error, match):
    with pytest.raises(error, match=match):
        Translator(model, **kwargs)


def test_translator_needs_a_seq2seq():
    with pytest.raises(TypeError, match="model=None"):
        Translator(None)


# ---------------------------------------------------------------- call and generate arguments
@pytest.mark.parametrize(
    "inputs, match",
    [
        ({"source_ids": SRC[..., None], "target_ids": TGT}, r"source_ids.shape=\(2, 4, 1\)"),
        ({"source_ids": SRC, "target_ids": TGT[0]}, r"target_ids.shape=\(3,\)"),
        ({"source_ids": SRC, "target_ids": TGT[:1]}, r"source_ids.shape=\(2, 4\).*\(1, 3\)"),
        ({"source_ids": SRC}, r"Received keys: \['source_ids'\]"),
        ((SRC, TGT, TGT), "Received: tuple"),
    ],
)
def test_bad_model_inputs(model, inputs, match):
    with pytest.raises(ValueError, match=match):
        model(inputs)


@pytest.mark.parametrize(
    "source, kwargs, match",
    [
        (SRC + V_SRC, {}, r"\[0, 13\).*from 13 to 19"),
        (SRC - 1, {}, r"\[0, 13\).*from -1"),
        (SRC.astype("float32"), {}, "source_ids.dtype=float32"),
        (SRC[0], {}, r"shape \(4,\)"),
        (SRC, {"max_length": 0}, "max_length=0"),
        (SRC, {"beam_width": "2"}, "beam_width='2'"),
        (SRC, {"beam_width": 2, "length_penalty": float("inf")}, "length_penalty=inf"),
    ],
)
def test_bad_generate_arguments(model, source, kwargs, match):
    with pytest.raises(ValueError, match=match):
        model.generate(source, **kwargs)


def _generate_step_fn(model, memory, mask, beam_width):
    return model.make_step_fn(memory, mask, beam_width)  # PAD and START masked, as `generate`


def _decoder_step_fn(model, memory, mask, beam_width):
    return model.decoder.make_step_fn(memory, mask, beam_width)  # what make_step_fn gives


@pytest.mark.parametrize("make", [_generate_step_fn, _decoder_step_fn], ids=["generate", "plain"])
@pytest.mark.parametrize(
    "made_for, search, match",
    [
        (2, {"beam_width": 3}, r"beam_width=2\).*Received: beam_width=3"),
        (2, {"beam_width": 1}, r"beam_width=2\).*Received: beam_width=1"),
        (1, {"batch_size": 3}, r"memory rows .* \(2\)\. Received: batch_size=3"),
        (1, {"start_id": V_TGT + 4}, r"\[0, 11\).*Received: start_id=15"),
    ],
)
def test_the_generate_step_function_keeps_its_argument_checks(model, make, made_for, search, match):
    # `generate`'s token-masked step function records what it was made for, as
    # `make_step_fn`'s does, so a search given other values fails the same way (issue 14:
    # the masking wrapper used to drop those fields, and the searches skipped their checks).
    memory, mask, state = model.encode(SRC)
    step_fn = make(model, memory, mask, made_for)
    assert (step_fn.beam_width, step_fn.batch_size) == (made_for, 2)
    assert step_fn.input_vocabulary_size == V_TGT
    options = {"batch_size": 2, "start_id": 2, "end_id": 3, "max_length": 3, **search}
    width = options.pop("beam_width", made_for)
    with pytest.raises(ValueError, match=match):
        if width == 1:
            greedy_search(step_fn, state, **options)
        else:
            beam_search(step_fn, state, beam_width=width, **options)


# ---------------------------------------------------------------- empty and padded inputs
def _search(max_length: int, beam_width: int):
    if beam_width == 1:
        return GreedySearch(max_length)
    return BeamSearch(beam_width, max_length=max_length)


def test_empty_batch(model):
    assert tuple(model({"source_ids": SRC[:0], "target_ids": TGT[:0]}).shape) == (0, 3, V_TGT)
    for beam_width in (1, 2):
        result = {k: _np(v) for k, v in model.generate(SRC[:0], _search(4, beam_width)).items()}
        assert result["ids"].shape == (0, 4) and result["alignments"].shape == (0, 4, 4)
        assert result["scores"].shape == (0,)
        if beam_width > 1:
            assert result["beam_ids"].shape == (0, 2, 4)
    assert Translator(model, max_length=4, jit_compile=False)(SRC[:0])["ids"].shape == (0, 4)


@pytest.mark.parametrize("beam_width", [1, 2])
def test_an_empty_batch_has_the_keys_dtypes_and_trailing_shapes_of_a_full_one(model, beam_width):
    # One builder of empty results (decoding/results.py) for generate, Translator and export
    # (issue 14); Translator's empty result lacked "alignments" and "normalized_scores".
    # A Translator's non-empty result is generate's, as NumPy (its compiled search is not run
    # here: tracing it costs seconds).
    translator = Translator(model, _search(2, beam_width), jit_compile=False)
    full = {k: _np(v) for k, v in model.generate(SRC, _search(2, beam_width)).items()}
    for empty in (model.generate(SRC[:0], _search(2, beam_width)), translator(SRC[:0])):
        empty = {k: _np(v) for k, v in empty.items()}
        assert sorted(empty) == sorted(full)
        for key, value in full.items():
            assert empty[key].dtype == value.dtype, key
            assert empty[key].shape == (0, *value.shape[1:]), key


def test_no_source_steps_is_one_padding_step(model):
    padding = np.zeros((2, 1), "int32")
    logits = _np(model({"source_ids": SRC[:, :0], "target_ids": TGT}))
    expected = _np(model({"source_ids": padding, "target_ids": TGT}))
    np.testing.assert_array_equal(logits, expected)
    assert np.all(np.isfinite(logits))
    for beam_width in (1, 2):
        empty = {k: _np(v) for k, v in model.generate(SRC[:, :0], _search(4, beam_width)).items()}
        padded = {k: _np(v) for k, v in model.generate(padding, _search(4, beam_width)).items()}
        assert empty["alignments"].shape == (2, 4, 0)
        np.testing.assert_array_equal(empty["ids"], padded["ids"])


def test_no_target_steps(model):
    logits = model({"source_ids": SRC, "target_ids": TGT[:, :0]})
    assert tuple(logits.shape) == (2, 0, V_TGT)


def test_all_padding_source_gives_finite_outputs_and_zero_alignments(model):
    logits = _np(model({"source_ids": np.zeros_like(SRC), "target_ids": TGT}))
    assert np.all(np.isfinite(logits))
    result = {k: _np(v) for k, v in model.generate(np.zeros_like(SRC), max_length=4).items()}
    np.testing.assert_array_equal(result["alignments"], 0.0)
    assert np.all(np.isfinite(result["scores"]))

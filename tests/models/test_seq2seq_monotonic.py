"""`Seq2Seq(attention="monotonic" | "location_sensitive")`: training, greedy and beam decoding
(the alignment state reordered with the beams), `.keras` round trips and SavedModel export."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from keras_attention import (
    BahdanauMonotonicAttention,
    LocationSensitiveAttention,
    LuongMonotonicAttention,
)
from keras_attention.models import Seq2Seq
from tests.backend_utils import to_numpy

OPTIONS = {
    "monotonic-general": {"attention": "monotonic", "score_mode": "general"},
    "monotonic-concat": {"attention": "monotonic", "score_mode": "concat", "score_units": 5},
    "location-sensitive": {"attention": "location_sensitive", "score_units": 5},
}
SOURCE = np.array([[5, 6, 7, 3, 0, 0], [4, 8, 9, 10, 6, 3]], "int32")
TARGET = np.array([[2, 7, 8, 0], [2, 9, 4, 5]], "int32")


def _model(options):
    keras.utils.set_random_seed(0)
    model = Seq2Seq(12, 11, units=8, embedding_dim=4, encoder_units=4, **options)
    model({"source_ids": SOURCE, "target_ids": TARGET})
    return model


@pytest.fixture(scope="module", params=sorted(OPTIONS))
def model(request):
    return request.param, _model(OPTIONS[request.param])


def test_layers_and_padding_invariance(model):
    name, model = model
    expected = {
        "monotonic-general": LuongMonotonicAttention,
        "monotonic-concat": BahdanauMonotonicAttention,
        "location-sensitive": LocationSensitiveAttention,
    }[name]
    assert type(model.decoder.cell.attention) is expected
    logits = to_numpy(model({"source_ids": SOURCE, "target_ids": TARGET}))
    padded = np.pad(SOURCE, ((0, 0), (0, 3)))
    longer = to_numpy(model({"source_ids": padded, "target_ids": TARGET}))
    np.testing.assert_allclose(longer, logits, atol=1e-5)
    assert np.all(np.isfinite(logits))


def test_generate_greedy_and_beam(model):
    _, model = model
    greedy = model.generate(SOURCE, max_length=5)
    beam = model.generate(SOURCE, max_length=5, beam_width=3, length_penalty=0.0)
    for result in (greedy, beam):
        alignments = to_numpy(result["alignments"])
        assert alignments.shape == (2, 5, 6)
        assert np.all(alignments[0, :, 4:] == 0.0)  # source padding never gets weight
        assert np.all(np.isfinite(alignments))
    assert np.all(to_numpy(beam["scores"]) >= to_numpy(greedy["scores"]) - 1e-5)


def test_keras_round_trip(model, tmp_path):
    _, model = model
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    inputs = {"source_ids": SOURCE, "target_ids": TARGET}
    np.testing.assert_array_equal(to_numpy(loaded(inputs)), to_numpy(model(inputs)))
    np.testing.assert_array_equal(
        to_numpy(loaded.generate(SOURCE, max_length=4)["ids"]),
        to_numpy(model.generate(SOURCE, max_length=4)["ids"]),
    )


def test_dot_score_is_refused_for_monotonic():
    with pytest.raises(ValueError, match="score_mode='dot'"):
        Seq2Seq(12, 11, units=8, attention="monotonic", score_mode="dot")


def test_fit_one_epoch():
    model = _model(OPTIONS["location-sensitive"])
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile("adam", loss, jit_compile=False)  # XLA: tests/cells
    labels = np.concatenate([TARGET[:, 1:], np.zeros((2, 1), "int32")], axis=1)
    history = model.fit({"source_ids": SOURCE, "target_ids": TARGET}, labels, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])


@pytest.mark.tensorflow_only
@pytest.mark.slow
def test_export_saved_model_monotonic(tmp_path):
    import tensorflow as tf

    from keras_attention.export import FORBIDDEN_OPS, export_saved_model, exported_ops
    from keras_attention.models import Translator

    model = _model(OPTIONS["monotonic-general"])
    export_saved_model(model, tmp_path / "beam", max_length=4, beam_width=2)
    loaded = tf.saved_model.load(str(tmp_path / "beam"))
    ids = loaded.signatures["serving_default"](source_ids=tf.constant(SOURCE))["ids"]
    expected = Translator(model, max_length=4, beam_width=2, jit_compile=False)(SOURCE)["ids"]
    np.testing.assert_array_equal(ids.numpy(), to_numpy(expected))
    assert not FORBIDDEN_OPS & exported_ops(tmp_path / "beam")

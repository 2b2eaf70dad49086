"""A `Seq2SeqEnsemble` exports as one model: the SavedModel (TF Serving) and the `.tflite`
file (LiteRT) decode exactly as its `Translator` does in this process."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention.export import export_litert, export_saved_model
from keras_attention.models import Seq2Seq, Seq2SeqEnsemble, Translator

pytestmark = pytest.mark.tensorflow_only

SOURCE = np.array([[5, 6, 7, 3], [4, 3, 0, 0], [9, 10, 11, 3]], "int32")


@pytest.fixture(scope="module")
def ensemble():
    keras.utils.set_random_seed(0)
    members = [
        Seq2Seq(12, 9, embedding_dim=6, units=8, rnn="gru", attention="bahdanau"),
        Seq2Seq(12, 9, embedding_dim=8, units=12),
    ]
    return Seq2SeqEnsemble(members)


@pytest.mark.slow
def test_saved_model_decodes_as_the_translator(ensemble, tmp_path):
    expected = Translator(ensemble, max_length=5, beam_width=3, jit_compile=False)(SOURCE)
    single = Translator(ensemble.members[0], max_length=5, beam_width=3, jit_compile=False)
    assert not np.array_equal(single(SOURCE)["scores"], expected["scores"])  # not one member
    path = export_saved_model(ensemble, str(tmp_path / "ensemble"), max_length=5, beam_width=3)
    outputs = tf.saved_model.load(path).signatures["serving_default"](
        source_ids=tf.constant(SOURCE)
    )
    np.testing.assert_array_equal(outputs["ids"].numpy(), expected["ids"])
    np.testing.assert_allclose(outputs["scores"].numpy(), expected["scores"], rtol=1e-5)


@pytest.mark.slow
def test_litert_file_decodes_as_the_translator(ensemble, tmp_path):
    interpreter_module = pytest.importorskip("ai_edge_litert.interpreter")
    expected = Translator(ensemble, max_length=5, beam_width=3, jit_compile=False)(SOURCE)
    path = tmp_path / "ensemble.tflite"
    export_litert(ensemble, path, source_length=8, max_length=5, beam_width=3)
    run = interpreter_module.Interpreter(model_path=str(path)).get_signature_runner("beam")
    ids = np.stack([run(source_ids=np.pad(row, (0, 4))[None])["ids"][0] for row in SOURCE])
    np.testing.assert_array_equal(ids, expected["ids"])

"""Out-of-vocabulary ids in `Seq2Seq`: one behaviour on every backend (docs/design.md §6).

- Default (`oov_id=None`): host ids (NumPy) outside a vocabulary are a `ValueError` naming the
  side, from the model call, `fit`, `evaluate`, `predict`, the `*_on_batch` methods and
  `generate`; ids in backend tensors (not read back) embed as a zero vector: finite logits,
  equal to those of an in-vocabulary id whose embedding row is zero.
- `oov_id=k`: every id outside a vocabulary is read as `k`, eagerly, under XLA and in
  `Translator`; the option is saved in the config.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention.models import Seq2Seq, Translator
from tests.backend_utils import BACKEND, jit, to_numpy

V_SRC, V_TGT, UNK = 13, 11, 1
SRC = np.array([[4, 5, 3, 0], [6, 7, 3, 0]], "int32")
TGT = np.array([[2, 4, 5], [2, 6, 0]], "int32")
OOV_SRC = np.array([[4, 13, 3, 0], [-2, 7, 99, 0]], "int32")  # 13 = V_SRC
OOV_TGT = np.array([[2, 11, 5], [2, -1, 0]], "int32")  # 11 = V_TGT
JIT_COMPILE = BACKEND != "torch"  # torch: `jit_compile=True` is torch.compile (minutes)
_LOSS = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def _unk(ids, size):
    return np.where((ids >= 0) & (ids < size), ids, UNK).astype("int32")


def _inputs(source, target, tensors=False):
    x = {"source_ids": source, "target_ids": target}
    return {k: ops.convert_to_tensor(v) for k, v in x.items()} if tensors else x


@pytest.fixture(scope="module")
def models():
    keras.utils.set_random_seed(0)
    strict = Seq2Seq(V_SRC, V_TGT, embedding_dim=6, units=8)
    mapped = Seq2Seq(V_SRC, V_TGT, embedding_dim=6, units=8, oov_id=UNK)
    strict(_inputs(SRC, TGT))
    mapped(_inputs(SRC, TGT))
    mapped.set_weights(strict.get_weights())
    return strict, mapped


# ---------------------------------------------------------------- default: a clear error
@pytest.mark.parametrize(
    "method", ["call", "fit", "evaluate", "predict", "train_on_batch", "test_on_batch",
               "predict_on_batch"],
)  # fmt: skip
@pytest.mark.parametrize("side", ["source", "target"])
def test_host_ids_out_of_vocabulary_are_an_error(models, method, side):
    model = models[0]
    x = _inputs(OOV_SRC, TGT) if side == "source" else _inputs(SRC, OOV_TGT)
    match = r"`source_ids` must be in \[0, 13\).*from -2 to 99" if side == "source" else (
        r"`target_ids` must be in \[0, 11\).*from -1 to 11.*oov_id")  # fmt: skip
    with pytest.raises(ValueError, match=match):
        if method == "call":
            model(x)
        elif method in ("fit", "evaluate", "train_on_batch", "test_on_batch"):
            getattr(model, method)(x, TGT, **({} if "batch" in method else {"verbose": 0}))
        else:
            getattr(model, method)(x)


def test_validation_data_out_of_vocabulary_is_an_error(models):
    x = _inputs(SRC, TGT)
    with pytest.raises(ValueError, match=r"`target_ids` must be in \[0, 11\)"):
        models[0].fit(x, TGT, validation_data=(_inputs(SRC, OOV_TGT), TGT), verbose=0)


def test_generate_and_translator_reject_host_ids_out_of_vocabulary(models):
    for decode in (models[0].generate, Translator(models[0], max_length=3, jit_compile=False)):
        with pytest.raises(ValueError, match=r"\[0, 13\).*from -2 to 99"):
            decode(OOV_SRC)


def test_tensor_ids_out_of_vocabulary_embed_as_zero_vectors(models):
    """The same finite logits on every backend: an id outside the vocabulary reads as an
    in-vocabulary id (8 in the source, 9 in the target) whose embedding row is all zeros."""
    model = models[0]
    logits = to_numpy(model(_inputs(OOV_SRC, OOV_TGT, tensors=True)))
    assert np.all(np.isfinite(logits))
    source = np.where((OOV_SRC >= 0) & (OOV_SRC < V_SRC), OOV_SRC, 8).astype("int32")
    target = np.where((OOV_TGT >= 0) & (OOV_TGT < V_TGT), OOV_TGT, 9).astype("int32")
    tables = [model.encoder.embedding.embeddings, model.decoder.embedding.embeddings]
    saved = [to_numpy(t).copy() for t in tables]
    try:
        for table, value, row in zip(tables, saved, (8, 9)):
            zeroed = value.copy()
            zeroed[row] = 0.0
            table.assign(zeroed)
        expected = to_numpy(model(_inputs(source, target)))
    finally:
        for table, value in zip(tables, saved):
            table.assign(value)
    np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-6)
    # the step keeps its mask: an out-of-vocabulary id is not padding
    assert not np.allclose(expected, to_numpy(model(_inputs(np.where(source == 8, 0, source),
                                                            target))))  # fmt: skip


# ---------------------------------------------------------------- oov_id: mapped to UNK
@pytest.mark.parametrize("tensors", [False, True], ids=["numpy", "tensors"])
def test_oov_id_maps_to_the_unknown_token(models, tensors):
    strict, mapped = models
    logits = to_numpy(mapped(_inputs(OOV_SRC, OOV_TGT, tensors)))
    expected = to_numpy(strict(_inputs(_unk(OOV_SRC, V_SRC), _unk(OOV_TGT, V_TGT))))
    np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-6)


def test_oov_id_in_generate(models):
    strict, mapped = models
    expected = to_numpy(strict.generate(_unk(OOV_SRC, V_SRC), max_length=3)["ids"])
    np.testing.assert_array_equal(to_numpy(mapped.generate(OOV_SRC, max_length=3)["ids"]), expected)
    tensor = ops.convert_to_tensor(OOV_SRC)
    np.testing.assert_array_equal(to_numpy(mapped.generate(tensor, max_length=3)["ids"]), expected)


@pytest.mark.slow  # ~8 s: two XLA compilations
@pytest.mark.skipif(not JIT_COMPILE, reason="XLA: TensorFlow and JAX (PyTorch runs eagerly)")
def test_oov_id_and_zero_vectors_under_xla(models):
    strict, mapped = models
    x = _inputs(OOV_SRC, OOV_TGT, tensors=True)
    np.testing.assert_allclose(
        to_numpy(jit(lambda x: mapped(x))(x)), to_numpy(mapped(x)), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(
        to_numpy(jit(lambda x: strict(x))(x)), to_numpy(strict(x)), rtol=1e-5, atol=1e-6
    )


@pytest.mark.slow
def test_oov_id_in_a_compiled_translator_and_fit(models):
    strict, mapped = models
    expected = to_numpy(strict.generate(_unk(OOV_SRC, V_SRC), max_length=4)["ids"])
    # XLA on TensorFlow (tf.function(jit_compile=True)) and JAX (jax.jit); eager on PyTorch
    translator = Translator(mapped, max_length=4, jit_compile=JIT_COMPILE, pad_to_multiple=4)
    np.testing.assert_array_equal(translator(OOV_SRC)["ids"], expected)

    model = Seq2Seq.from_config(mapped.get_config())
    model(_inputs(SRC, TGT))
    model.set_weights(mapped.get_weights())
    model.compile("adam", _LOSS, jit_compile=JIT_COMPILE)
    x = _inputs(OOV_SRC, OOV_TGT, tensors=True)
    losses = [float(model.train_on_batch(x, TGT)) for _ in range(2)]
    assert np.all(np.isfinite(losses)) and losses[1] < losses[0]


def test_oov_id_config_round_trip(models, tmp_path):
    strict, mapped = models
    assert mapped.get_config()["oov_id"] == UNK
    assert "oov_id" not in strict.get_config()  # configs without the option stay as they were
    assert Seq2Seq.from_config(mapped.get_config()).oov_id == UNK
    assert Seq2Seq.from_config(strict.get_config()).oov_id is None
    path = str(tmp_path / "oov.keras")
    mapped.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    assert loaded.oov_id == UNK
    x = _inputs(OOV_SRC, OOV_TGT)
    np.testing.assert_allclose(to_numpy(loaded(x)), to_numpy(mapped(x)), rtol=1e-6, atol=1e-6)

"""`Seq2SeqHyperModel`: compiled models, a short RandomSearch, the best model reloads."""

from __future__ import annotations

import keras
import numpy as np
import pytest

keras_tuner = pytest.importorskip("keras_tuner")

from keras_attention.decoding import GreedySearch  # noqa: E402
from keras_attention.models import Seq2Seq  # noqa: E402
from keras_attention.tuning import Seq2SeqHyperModel  # noqa: E402

FIXED = {"units": 8, "embedding_dim": 4}


def _copy_task(rng, samples):
    """Targets are the source sequence (ids 4..9), decoder inputs start with id 2."""
    lengths = rng.integers(2, 6, size=samples)
    tokens = rng.integers(4, 10, size=(samples, 5))
    tokens = np.where(np.arange(5) < lengths[:, None], tokens, 0)
    source = np.concatenate([tokens, np.zeros((samples, 1), int)], axis=1)
    source[np.arange(samples), lengths] = 3  # END
    labels = source.copy()
    target = np.concatenate([np.full((samples, 1), 2), labels[:, :-1]], axis=1)
    target = np.where(labels > 0, target, 0)
    x = {"source_ids": source.astype("int32"), "target_ids": target.astype("int32")}
    return x, labels.astype("int32")


def test_build_compiles_with_the_tuned_learning_rate():
    hypermodel = Seq2SeqHyperModel(10, 10, fixed=FIXED, jit_compile=False)
    hp = keras_tuner.HyperParameters()
    hp.values["learning_rate"] = 0.005
    model = hypermodel.build(hp)
    assert isinstance(model, Seq2Seq) and model.built and model.name == "seq2seq"
    assert np.isclose(float(model.optimizer.learning_rate), 0.005)
    assert isinstance(model.loss, keras.losses.SparseCategoricalCrossentropy)
    assert model.loss.get_config()["from_logits"] is True
    assert model.jit_compile is False
    learning_rate = next(p for p in hp.space if p.name == "learning_rate")
    assert (learning_rate.min_value, learning_rate.max_value) == (1e-3, 1e-2)
    assert learning_rate.sampling == "log"

    fixed = Seq2SeqHyperModel(10, 10, fixed={**FIXED, "learning_rate": 0.02}, name="m")
    hp = keras_tuner.HyperParameters()
    model = fixed.build(hp)
    assert "learning_rate" not in hp.values and model.name == "m"
    assert np.isclose(float(model.optimizer.learning_rate), 0.02) and model.jit_compile is True


@pytest.mark.slow  # end to end (`make test-extended`, which CI runs; issue 43)
def test_random_search_and_the_best_model_reloads(tmp_path):
    keras.utils.set_random_seed(0)
    x, y = _copy_task(np.random.default_rng(0), 64)
    x_val, y_val = _copy_task(np.random.default_rng(1), 16)
    hypermodel = Seq2SeqHyperModel(10, 10, fixed=FIXED, jit_compile=False)
    tuner = keras_tuner.RandomSearch(
        hypermodel,
        objective="val_accuracy",
        max_trials=2,
        seed=0,
        directory=str(tmp_path),
        project_name="search",
    )
    tuner.search(x, y, validation_data=(x_val, y_val), epochs=1, batch_size=32, verbose=0)
    trials = tuner.oracle.get_best_trials(2)
    assert len(trials) == 2 and all(t.status == "COMPLETED" for t in trials)
    assert all(0.0 <= t.score <= 1.0 for t in trials)

    best = tuner.get_best_models(1)[0]
    assert int(best.optimizer.iterations) == 2  # the checkpoint's optimizer state loaded too
    path = tmp_path / "best.keras"
    best.save(path)
    reloaded = keras.saving.load_model(path)
    assert isinstance(reloaded, Seq2Seq)
    assert reloaded.get_config() == best.get_config()
    assert int(reloaded.optimizer.iterations) == 2
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(reloaded(x_val)), keras.ops.convert_to_numpy(best(x_val))
    )
    search = GreedySearch(6)
    ids = [keras.ops.convert_to_numpy(m.generate(x_val["source_ids"], search)["ids"]) for m in
           (best, reloaded)]  # fmt: skip
    np.testing.assert_array_equal(*ids)


SIZES = {"source_vocabulary_size": 9, "target_vocabulary_size": 9}


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"target_vocabulary_size": 9}, ValueError, r"source_vocabulary_size=None"),
        ({"source_vocabulary_size": 9}, ValueError, r"target_vocabulary_size=None"),
        ({**SIZES, "fixed": [("units", 8)]}, TypeError, r"`fixed` must be a dict.*'units', 8"),
        ({**SIZES, "fixed": {"source_tokenizer": 1}}, ValueError, r"source_tokenizer as argum"),
        ({**SIZES, "fixed": {"unit": 8}}, ValueError, r"`fixed` may only hold.*unknown: unit"),
        ({**SIZES, "jit_compile": "yes"}, ValueError, r"`jit_compile` .*jit_compile='yes'"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        Seq2SeqHyperModel(**kwargs)

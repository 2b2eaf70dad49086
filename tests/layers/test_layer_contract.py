"""The shared layer contract (STYLE.md "Tests"), run for every layer × mode."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from keras_attention import LuongAttention
from tests.backend_utils import BACKEND
from tests.conftest import LAYER_CASES, LAYER_IDS

VOCAB, DIM = 13, 8


def _tokens(rng, batch, length, min_length=1):
    tokens = rng.integers(1, VOCAB, size=(batch, length))
    lengths = rng.integers(min_length, length + 1, size=batch)
    tokens[np.arange(length)[None, :] >= lengths[:, None]] = 0
    return tokens


def _model(cls, kwargs, pooling=False):
    if pooling:
        return keras.Sequential(
            [
                keras.Input((None,), dtype="int32"),
                keras.layers.Embedding(VOCAB, DIM, mask_zero=True),
                keras.layers.GRU(DIM, return_sequences=True),
                cls(**kwargs),
                keras.layers.Dense(VOCAB),
            ]
        )
    src = keras.Input((None,), dtype="int32", name="source")
    tgt = keras.Input((None,), dtype="int32", name="target")
    out, weights = cls(**kwargs, name="attention")(
        [
            keras.layers.Embedding(VOCAB, DIM, mask_zero=True)(tgt),
            keras.layers.Embedding(
                VOCAB, DIM + 2 if kwargs.get("score_mode", "x") != "dot" else DIM, mask_zero=True
            )(src),
        ],
        return_attention_scores=True,
    )
    logits = keras.layers.Dense(VOCAB, name="logits")(out)
    return keras.Model({"source": src, "target": tgt}, {"logits": logits, "weights": weights})


def _data(seed=0, batch=6):
    rng = np.random.default_rng(seed)
    return {"source": _tokens(rng, batch, 9), "target": _tokens(rng, batch, 5)}


@pytest.fixture(params=LAYER_CASES, ids=LAYER_IDS)
def case(request):
    keras.utils.set_random_seed(0)
    return request.param


def test_config_round_trip(case):
    _, cls, kwargs, _ = case
    layer = cls(**kwargs, dropout=0.1, seed=3, kernel_regularizer="l2")
    clone = cls.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()
    serialized = keras.saving.serialize_keras_object(layer)
    assert serialized["registered_name"].startswith("keras_attention>")
    restored = keras.saving.deserialize_keras_object(serialized)
    assert type(restored) is cls and restored.get_config() == layer.get_config()


def test_symbolic_matches_eager(case):
    _, cls, kwargs, _ = case
    model = _model(cls, kwargs)
    data = _data()
    eager = model(data)
    for name in ("logits", "weights"):
        symbolic = model.outputs[0 if name == "logits" else 1]
        assert len(symbolic.shape) == len(eager[name].shape)
        assert all(s is None or s == e for s, e in zip(symbolic.shape, eager[name].shape))


def test_padding_invariance_with_mask_zero(case):
    _, cls, kwargs, _ = case
    model = _model(cls, kwargs)
    data = _data(1)
    out = model.predict(data, verbose=0)
    longer = {"source": np.pad(data["source"], ((0, 0), (0, 4))), "target": data["target"]}
    out_longer = model.predict(longer, verbose=0)
    np.testing.assert_allclose(out_longer["logits"], out["logits"], atol=1e-5)
    np.testing.assert_allclose(out_longer["weights"][..., :9], out["weights"], atol=1e-6)
    assert np.all(out_longer["weights"][..., 9:] == 0.0)
    assert np.all(out["weights"][data["source"][:, None, :].repeat(5, 1) == 0] == 0.0)


# Keras' `jit_compile=True` is XLA on TensorFlow and JAX, and `torch.compile` (TorchDynamo +
# Inductor, which generates and compiles C++) on PyTorch. On a CPU-only machine Inductor takes
# 1-3 minutes per model, and TorchDynamo stops compiling after 8 recompilations of Keras' step
# function and silently runs eagerly, so a compiled run of every case would cost half an hour
# and most cases would not even be compiled. On PyTorch the per-case test therefore runs eagerly
# (`jit_compile=False`, also Keras' default there) and `test_torch_compile_fit_matches_eager`
# compiles one case (the one with the most ops) for real.
JIT_COMPILE = BACKEND != "torch"


@pytest.mark.slow
def test_xla_predict_and_fit(case):
    _, cls, kwargs, _ = case
    model = _model(cls, kwargs)
    data = _data(2, batch=8)
    eager = model.predict(data, verbose=0)
    model.compile(
        "adam",
        loss={"logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)},
        jit_compile=JIT_COMPILE,
    )
    compiled = model.predict(data, verbose=0)
    np.testing.assert_allclose(compiled["logits"], eager["logits"], atol=1e-4)
    np.testing.assert_allclose(compiled["weights"], eager["weights"], atol=1e-5)
    history = model.fit(data, {"logits": data["target"]}, epochs=2, batch_size=4, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    pooled = _model(cls, kwargs, pooling=True)
    pooled.compile(
        "adam",
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=JIT_COMPILE,
    )
    history = pooled.fit(data["source"], data["target"][:, 0], epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])


@pytest.mark.slow
@pytest.mark.skipif(BACKEND != "torch", reason="torch.compile is jit_compile on PyTorch only")
def test_torch_compile_fit_matches_eager():
    import torch

    kwargs = {"score_mode": "general", "alignment": "local_predictive", "window_radius": 2}
    data = _data(2, batch=8)
    targets = {"logits": data["target"]}
    losses = {}
    torch._dynamo.reset()  # a fresh compile cache: no fallback to eager after 8 recompilations
    try:
        for jit_compile in (False, True):
            keras.utils.set_random_seed(0)
            model = _model(LuongAttention, kwargs)
            model.compile(
                keras.optimizers.SGD(0.1),
                loss={"logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)},
                jit_compile=jit_compile,
            )
            history = model.fit(data, targets, epochs=2, batch_size=4, shuffle=False, verbose=0)
            losses[jit_compile] = history.history["loss"]
        assert torch._dynamo.utils.counters["stats"]["unique_graphs"] > 0  # really compiled
    finally:
        torch._dynamo.reset()
    assert np.all(np.isfinite(losses[True]))
    np.testing.assert_allclose(losses[True], losses[False], rtol=1e-4)


def test_mixed_bfloat16(case):
    _, cls, kwargs, _ = case
    data = _data(3)
    reference = _model(cls, kwargs)
    expected = reference.predict(data, verbose=0)
    keras.config.set_dtype_policy("mixed_bfloat16")
    model = _model(cls, kwargs)
    model.set_weights(reference.get_weights())
    layer = model.get_layer("attention")
    assert all(w.dtype == "float32" for w in layer.weights)
    out = model.predict(data, verbose=0)
    assert out["weights"].dtype == "bfloat16"
    weights = out["weights"].astype("float32")
    assert np.all(np.isfinite(weights)) and np.all(np.isfinite(out["logits"].astype("float32")))
    np.testing.assert_allclose(weights, expected["weights"], atol=0.05)
    np.testing.assert_allclose(out["logits"].astype("float32"), expected["logits"], atol=0.1)
    model.compile(
        "adam", loss={"logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)}
    )
    history = model.fit(data, {"logits": data["target"]}, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])


def test_keras_file_round_trip(case, tmp_path):
    _, cls, kwargs, _ = case
    model = _model(cls, kwargs)
    data = _data(4)
    expected = model.predict(data, verbose=0)
    path = tmp_path / "model.keras"
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    out = loaded.predict(data, verbose=0)
    np.testing.assert_array_equal(out["logits"], expected["logits"])
    np.testing.assert_array_equal(out["weights"], expected["weights"])
    pooled = _model(cls, kwargs, pooling=True)
    expected = pooled.predict(data["source"], verbose=0)
    pooled.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    np.testing.assert_array_equal(loaded.predict(data["source"], verbose=0), expected)

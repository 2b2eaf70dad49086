"""Issue 31, item 3: what a careless user or an attacker tried, each once a silent wrong answer.

Each case was reproduced before its fix (the docstring of each test says what happened) and
now gets a clear error naming the argument and the value, or the correct answer.
"""

from __future__ import annotations

import json
import re
import zipfile

import keras
import numpy as np
import pytest

from keras_attention.decoding import sample_search
from keras_attention.functional.sampling import (
    MAX_TEMPERATURE,
    MIN_TEMPERATURE,
    MIN_TOP_P,
    check_sampling,
)
from keras_attention.models import Seq2Seq, Translator
from keras_attention.models.translator import MAX_LENGTH_LIMIT
from tests.backend_utils import to_numpy

SOURCE = np.array([[4, 5, 6, 3], [7, 3, 0, 0]], "int32")


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(0)
    model = Seq2Seq(12, 9, embedding_dim=6, units=8)
    model({"source_ids": SOURCE, "target_ids": np.array([[2, 4], [2, 5]], "int32")})
    return model


# ---------------------------------------------------------------- (a) a .keras file unbuilt
def _rewrite_config(path, out, mutate):
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(out, "w") as target:
        for item in source.namelist():
            data = source.read(item)
            if item == "config.json":
                config = json.loads(data)
                mutate(config)
                data = json.dumps(config)
            target.writestr(item, data)
    return out


def _drop_build_config(config):
    del config["build_config"]


def _wrong_input_shape(config):
    config["build_config"]["input_shape"] = [[None, None, 7]]


@pytest.mark.parametrize(
    "mutate", [_drop_build_config, _wrong_input_shape], ids=["no-build_config", "wrong-shape"]
)
def test_keras_file_without_a_usable_build_config_loads_its_weights(model, tmp_path, mutate):
    """Before: the model loaded with `built=False` (or True) and 0 weights, no error, and
    `generate` decoded with fresh random weights. Now it is built before its weights load:
    every weight equals the saved one and the decoded ids are the original model's."""
    path = tmp_path / "model.keras"
    model.save(path)
    bad = _rewrite_config(path, tmp_path / "bad.keras", mutate)
    loaded = keras.saving.load_model(bad, safe_mode=True)
    assert loaded.built and len(loaded.weights) == len(model.weights) > 0
    for got, want in zip(loaded.weights, model.weights):
        assert got.path == want.path
        np.testing.assert_array_equal(to_numpy(got), to_numpy(want))
    np.testing.assert_array_equal(
        to_numpy(loaded.generate(SOURCE, max_length=5)["ids"]),
        to_numpy(model.generate(SOURCE, max_length=5)["ids"]),
    )


def test_keras_file_with_missing_weights_is_refused(model, tmp_path):
    """Building first means Keras' own count check applies: a weights file that lacks a
    layer's variables is an error, not a half-loaded model."""
    path = tmp_path / "model.keras"
    model.save(path)
    out = tmp_path / "partial.keras"
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(out, "w") as target:
        for item in source.namelist():
            if item != "model.weights.h5":
                target.writestr(item, source.read(item))
        import h5py

        weights = tmp_path / "w.h5"
        weights.write_bytes(source.read("model.weights.h5"))
        with h5py.File(weights, "a") as f:
            del f["encoder/embedding/vars/0"]
        target.writestr("model.weights.h5", weights.read_bytes())
    with pytest.raises(ValueError):
        keras.saving.load_model(out, safe_mode=True)


# ---------------------------------------------------------------- (c) sampling's limits
@pytest.mark.parametrize("temperature", [1e-38, 1e-30, 1e-10, MIN_TEMPERATURE / 2, 1e7, 1e38])
def test_temperature_out_of_its_exact_range_is_refused(model, temperature):
    """Before: 1e-38 drew only padding (ids 0, scores -5e9); at 1e-10 XLA drew padding and
    eager did not; a huge temperature lifts the banned padding and start tokens (-1e9) into
    reach. Now outside [1e-4, 1e6] is an error naming the value."""
    with pytest.raises(ValueError, match=re.escape(f"temperature={temperature!r}")):
        Translator(model, sample=True, temperature=temperature, jit_compile=False)
    with pytest.raises(ValueError, match=re.escape(f"temperature={temperature!r}")):
        model.generate(SOURCE, max_length=3, sample=True, temperature=temperature)


@pytest.mark.parametrize("top_p", [1e-45, 1e-38, MIN_TOP_P / 2, 0.0])
def test_tiny_top_p_is_refused(model, top_p):
    """Before: 1e-45 and 1e-38 kept no token and drew only padding."""
    with pytest.raises(ValueError, match=re.escape(f"top_p={top_p!r}")):
        model.generate(SOURCE, max_length=3, sample=True, top_p=top_p)


@pytest.fixture(scope="module")
def sharp_model():
    """A freshly initialised model's logits differ by 1e-4..1e-3 (PyTorch's initialisation
    gave a 4.9e-4 gap on the greedy path), which the lowest temperature (1e-4) does not
    resolve: scaling the vocabulary projection by 1000 makes every gap far wider."""
    keras.utils.set_random_seed(0)
    model = Seq2Seq(12, 9, embedding_dim=6, units=8)
    model({"source_ids": SOURCE, "target_ids": np.array([[2, 4], [2, 5]], "int32")})
    for weight in model.decoder.projection.weights:
        weight.assign(weight * 1000.0)
    return model


def _greedy_path_gaps(model, greedy):
    """The gap between the best and second-best logit at every greedy step before the end."""
    start = np.full((greedy.shape[0], 1), model.start_id, "int32")
    target = np.concatenate([start, greedy[:, :-1]], axis=1).astype("int32")
    logits = to_numpy(model({"source_ids": SOURCE, "target_ids": target}))
    top2 = np.sort(logits, axis=-1)[..., -2:]
    live = np.concatenate([np.ones((greedy.shape[0], 1), bool), greedy[:, :-1] != 0], axis=1)
    return (top2[..., 1] - top2[..., 0])[live & (greedy != 0)]


@pytest.mark.parametrize(
    "jit_compile", [False, pytest.param("auto", marks=pytest.mark.slow)], ids=["eager", "xla"]
)
def test_sampling_at_the_bounds_never_draws_padding_and_eager_equals_compiled(
    sharp_model, jit_compile
):
    """At the lowest temperature and top_p allowed the draw is the greedy token at every step
    (the logits of this model differ by far more than the temperature resolves: asserted),
    never padding; at the highest temperature no banned token (padding, start) is ever drawn."""
    model = sharp_model
    greedy = to_numpy(model.generate(SOURCE, max_length=6)["ids"])
    assert _greedy_path_gaps(model, greedy).min() > 200 * MIN_TEMPERATURE
    for options in ({"temperature": MIN_TEMPERATURE}, {"top_p": MIN_TOP_P}):
        translator = Translator(
            model, max_length=6, sample=True, jit_compile=jit_compile, **options
        )
        ids = translator(SOURCE, seed=3)["ids"]
        np.testing.assert_array_equal(ids, greedy)
    hot = Translator(
        model, max_length=6, sample=True, temperature=MAX_TEMPERATURE, jit_compile=jit_compile
    )
    for seed in range(20):
        ids = hot(np.repeat(SOURCE, 8, axis=0), seed=seed)["ids"]
        lengths = (ids != 0).sum(axis=1)
        # Padding only after the end token, never the start token (2).
        assert ((ids != 0) == (np.arange(6) < lengths[:, None])).all()
        assert not (ids == model.start_id).any()


# ---------------------------------------------------------------- (e) top_k, seeds
def test_top_k_above_the_vocabulary_is_refused(model):
    """Before: top_k=100 with 9 target tokens was accepted silently (keeping every token)."""
    with pytest.raises(ValueError, match="top_k=100"):
        Translator(model, sample=True, top_k=100, jit_compile=False)
    with pytest.raises(ValueError, match="top_k=10"):
        model.generate(SOURCE, max_length=3, sample=True, top_k=10)
    Translator(model, sample=True, top_k=9, jit_compile=False)  # the whole vocabulary is fine
    with pytest.raises(ValueError, match="top_k=10"):
        check_sampling(1.0, 10, None, vocabulary_size=9)


@pytest.mark.parametrize("seed", [-1, 2**31, 2**40, 1.5, True, "7"])
def test_one_seed_range_everywhere(model, seed):
    """Before: `generate(seed=-1)` was accepted while `Translator(...)(seed=-1)` refused it."""
    with pytest.raises(ValueError, match="seed"):
        model.generate(SOURCE, max_length=3, sample=True, seed=seed)
    translator = Translator(model, max_length=3, sample=True, jit_compile=False)
    with pytest.raises(ValueError, match="seed"):
        translator(SOURCE, seed=seed)
    with pytest.raises(ValueError, match="seed"):
        Translator(model, sample=True, seed=seed, jit_compile=False)


def test_the_largest_seed_is_accepted_everywhere(model):
    seed = 2**31 - 1
    translator = Translator(model, max_length=4, sample=True, seed=seed, jit_compile=False)
    np.testing.assert_array_equal(
        translator(SOURCE, seed=seed)["ids"],
        to_numpy(model.generate(SOURCE, max_length=4, sample=True, seed=seed)["ids"]),
    )
    result = sample_search(
        lambda tokens, state, t: (keras.ops.zeros((2, 5)), state, None),
        (),
        batch_size=2,
        start_id=1,
        end_id=2,
        max_length=2,
        seed=np.int64(seed),
    )
    assert tuple(result["ids"].shape) == (2, 2)


# ---------------------------------------------------------------- max_length ceiling
def test_translator_max_length_has_a_ceiling(model):
    """Before: max_length=10**6 was accepted (eager `generate` then ran about 80 minutes)."""
    with pytest.raises(ValueError, match=r"max_length=1000000"):
        Translator(model, max_length=10**6)
    with pytest.raises(ValueError, match=f"at most {MAX_LENGTH_LIMIT}"):
        Translator(model, max_length=MAX_LENGTH_LIMIT + 1)
    assert Translator(model, max_length=MAX_LENGTH_LIMIT).max_length == MAX_LENGTH_LIMIT

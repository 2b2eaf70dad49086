"""The models' dropout (`HashedDropout`, `functional/dropout.py`): Keras' `Dropout` math with
the mask from the package's counter-based hash, checked against a NumPy uint32 transcription
of the hash and against the Bernoulli(1 - rate) law it must follow."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from keras_attention.functional import hashed_uniforms
from keras_attention.models._dropout import HashedDropout
from tests.backend_utils import jit, to_numpy
from tests.reference import lowbias32 as _lowbias32


def _numpy_uniforms(seed: int, counter: int, shape) -> np.ndarray:
    """float64: ((hash(hash(hash(seed) + counter·φ) + i) >> 9) + 0.5) / 2**23, mod 2**32."""
    with np.errstate(over="ignore"):
        key = _lowbias32(np.array([seed & 0xFFFFFFFF], np.uint64))
        step = (counter * 0x9E3779B9) & 0xFFFFFFFF
        key = _lowbias32((key.astype(np.uint64) + np.uint64(step)) & np.uint64(0xFFFFFFFF))
        index = np.arange(int(np.prod(shape)), dtype=np.uint64)
        bits = _lowbias32((key.astype(np.uint64) + index) & np.uint64(0xFFFFFFFF))
    return (((bits >> np.uint32(9)).astype(np.float64) + 0.5) / 2.0**23).reshape(shape)


@pytest.mark.parametrize("seed, counter", [(0, 0), (7, 3), (-5, 1000), (2**31 - 1, 2**20)])
def test_uniforms_match_a_numpy_transcription_of_the_hash(seed, counter):
    shape = (3, 5, 7)
    got = to_numpy(hashed_uniforms(seed, counter, shape))
    np.testing.assert_array_equal(got.astype(np.float64), _numpy_uniforms(seed, counter, shape))
    assert got.dtype == np.float32 and 0 < got.min() and got.max() < 1


def test_training_masks_follow_keras_dropout_math_and_the_bernoulli_law():
    rate, shape = 0.3, (64, 40, 50)  # 128,000 elements
    layer = HashedDropout(rate, seed=11)
    x = np.random.default_rng(0).normal(size=shape).astype("float32") + 3.0  # never 0
    y = to_numpy(layer(x, training=True))
    kept = y != 0
    # Kept elements are scaled by 1 / (1 - rate), as Keras' Dropout does; the others are 0.
    np.testing.assert_allclose(y[kept], x[kept] / (1 - rate), rtol=1e-6)
    n = kept.size
    sigma = np.sqrt(n * rate * (1 - rate))
    assert abs((~kept).sum() - n * rate) < 5 * sigma
    # The mask is the transcription's: the SeedGenerator's first state is [seed, 0].
    np.testing.assert_array_equal(kept, _numpy_uniforms(11, 0, shape) >= rate)
    # The next call draws another mask (the generator's counter moved on) ...
    again = to_numpy(layer(x, training=True)) != 0
    assert 0.3 < (again != kept).mean() < 0.5  # 2 · 0.3 · 0.7 = 0.42 expected
    # ... and a fresh layer with the same seed the same masks again.
    np.testing.assert_array_equal(to_numpy(HashedDropout(rate, seed=11)(x, training=True)) != 0,
                                  kept)  # fmt: skip


def test_inference_and_rate_zero_are_the_identity():
    x = np.arange(24, dtype="float32").reshape(2, 3, 4)
    np.testing.assert_array_equal(to_numpy(HashedDropout(0.5, seed=1)(x, training=False)), x)
    np.testing.assert_array_equal(to_numpy(HashedDropout(0.0, seed=1)(x, training=True)), x)
    assert HashedDropout(0.0).seed_generator is None


def test_compiled_draws_the_same_masks_as_eager():
    x = np.ones((4, 6, 8), "float32")
    eager = to_numpy(HashedDropout(0.25, seed=5)(x, training=True))
    compiled_layer = HashedDropout(0.25, seed=5)
    compiled = to_numpy(jit(lambda a: compiled_layer(a, training=True))(x))
    np.testing.assert_array_equal(compiled, eager)


def test_the_models_use_it_and_its_stream_is_found_by_name():
    from keras_attention.models import Seq2Seq

    model = Seq2Seq(source_vocabulary_size=9, target_vocabulary_size=7, embedding_dim=4,
                    units=8, dropout=0.2)  # fmt: skip
    assert isinstance(model.encoder.dropout_layer, HashedDropout)
    assert isinstance(model.decoder.dropout_layer, HashedDropout)
    ids = np.array([[4, 5, 3, 0]], "int32")
    model({"source_ids": ids, "target_ids": ids})
    states = [v for v in model.variables if v.path.endswith("seed_generator_state")]
    assert len(states) >= 2  # what backups of the dropout streams look for (examples/_resume.py)
    assert not any(v.trainable for v in states)
    assert keras.backend.backend()  # (any backend: the hash is keras.ops int32 arithmetic)

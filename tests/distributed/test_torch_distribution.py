"""What `keras.distribution` does on PyTorch (Keras 3.15): nothing; it is JAX's API.

Keras has no PyTorch implementation of `keras.distribution` (no `distribution_lib` in its
PyTorch backend): `list_devices()` fails, and a `DataParallel` distribution is accepted but
places nothing: a model built and fitted in its scope trains on the one default device and
gives exactly the weights it gives without a distribution. Multi-GPU PyTorch training
goes through PyTorch's own `DistributedDataParallel` in a custom loop (Keras' guide
"Multi-GPU distributed training with PyTorch"); not tested here.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "torch", reason="what keras.distribution does on PyTorch"
)


def test_list_devices_is_not_implemented():
    with pytest.raises(AttributeError):
        keras.distribution.list_devices()


def test_data_parallel_trains_as_without_distribution():
    from keras_attention.models import Seq2Seq

    rng = np.random.default_rng(0)
    inputs = {
        "source_ids": rng.integers(1, 9, size=(8, 5)).astype("int32"),
        "target_ids": rng.integers(1, 7, size=(8, 4)).astype("int32"),
    }
    labels = rng.integers(1, 7, size=(8, 4)).astype("int32")

    def fit(distribution=None):
        import contextlib

        with distribution.scope() if distribution else contextlib.nullcontext():
            keras.utils.set_random_seed(0)
            model = Seq2Seq(source_vocabulary_size=9, target_vocabulary_size=7,
                            embedding_dim=4, units=8)  # fmt: skip
            model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
            model.fit(inputs, labels, batch_size=8, verbose=0)
            return model.get_weights()

    plain = fit()
    split = fit(keras.distribution.DataParallel(devices=["cpu:0", "cpu:1"]))
    for a, b in zip(plain, split):
        np.testing.assert_array_equal(a, b)

"""`Seq2Seq.get_layout_map`: which weights it shards, and its argument checks."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from keras_attention.models import Seq2Seq


def mesh(axis_names=("batch", "model")):
    return keras.distribution.DeviceMesh((1, 1), list(axis_names), ["cpu:0"])


@pytest.mark.parametrize("rnn", ["lstm", "gru"])
def test_vocabulary_axes_go_to_the_model_axis_and_nothing_else(rnn):
    model = Seq2Seq(
        source_vocabulary_size=16,
        target_vocabulary_size=12,
        embedding_dim=8,
        units=8,
        rnn=rnn,
        attention="bahdanau",
        decoder_num_layers=2,
        name="any_name",
    )
    model({"source_ids": np.ones((2, 3), "int32"), "target_ids": np.ones((2, 2), "int32")})
    layout_map = Seq2Seq.get_layout_map(mesh(("data", "shards")), "shards")
    expected = {
        "any_name/encoder/embedding/embeddings": ("shards", None),  # [16, 8]
        "any_name/decoder/embedding/embeddings": ("shards", None),  # [12, 8]
        "any_name/decoder/projection/kernel": (None, "shards"),  # [units', 12]
        "any_name/decoder/projection/bias": ("shards",),  # [12]
    }
    for weight in model.weights:
        layout = layout_map[weight.path]
        if weight.path in expected:
            assert layout.axes == expected[weight.path]
            vocabulary_axis = expected[weight.path].index("shards")
            assert weight.shape[vocabulary_axis] in (16, 12)
        else:
            assert layout is None, weight.path  # replicated
    assert set(expected) <= {w.path for w in model.weights}


def test_bad_arguments_name_them():
    with pytest.raises(TypeError, match="Received: device_mesh="):
        Seq2Seq.get_layout_map("mesh")
    with pytest.raises(ValueError, match="Received: model_parallel_dim_name='vocab'"):
        Seq2Seq.get_layout_map(mesh(), "vocab")

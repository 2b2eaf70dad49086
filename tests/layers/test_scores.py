"""Layers are a form and a score (docs/design.md §3): one parent each, the score an object."""

import inspect

import numpy as np
import pytest

from keras_attention import layers as L
from keras_attention.layers import _scores as S

LAYERS = [
    (lambda: L.AdditiveAttention(4), S.AdditiveScore),
    (lambda: L.LuongAttention("dot"), S.DotScore),
    (lambda: L.LuongAttention("general"), S.GeneralScore),
    (lambda: L.LuongAttention("concat", units=4), S.AdditiveScore),
    (lambda: L.BahdanauMonotonicAttention(4), S.AdditiveScore),
    (lambda: L.LuongMonotonicAttention(use_scale=True), S.GeneralScore),
    (lambda: L.LocationSensitiveAttention(4, filters=2, kernel_size=3), S.LocationScore),
]


def test_no_layer_class_has_two_parents():
    for name in L.__all__:
        cls = getattr(L, name)
        for klass in inspect.getmro(cls):
            if klass.__module__.startswith("keras_attention"):
                assert len(klass.__bases__) == 1, f"{klass.__name__}: {klass.__bases__}"


@pytest.mark.parametrize("make, family", LAYERS)
def test_the_score_object_is_the_layers_family_and_owns_no_other_weights(make, family):
    layer = make()
    assert type(layer.score) is family
    query, value = np.ones((2, 3, 6), "float32"), np.ones((2, 5, 6), "float32")
    layer(query, value)
    # Every weight the score made is the layer's (none outside its tracking), none twice.
    paths = [w.path for w in layer.weights]
    assert len(paths) == len(set(paths))
    bias = layer.score.bias_init is not None
    assert bias == isinstance(layer, L.BahdanauMonotonicAttention | L.LuongMonotonicAttention)
    if bias:
        assert paths.index(layer.score_bias.path) == len(paths) - 1 - layer.use_scale

"""`compute_output_shape` over every public layer, by position and by keyword (`input_shape=`).

Keras' own layers name the argument `input_shape` (`keras.layers.Attention`, `Dense`, ...), so a
user (or a tool written against Keras) calls `layer.compute_output_shape(input_shape=...)`. Each
public layer that implements the method must accept that form and give the shape the layer's
real call gives; a layer that leaves it to Keras (shapes traced from `call`) must fail the same
way by keyword as by position (Keras' `NotImplementedError`), never with a `TypeError`.
"""

from __future__ import annotations

import inspect

import keras
import numpy as np
import pytest

import keras_attention
from keras_attention import (
    AdditiveAttention,
    AttentionRNN,
    BahdanauAttention,
    BahdanauAttentionCell,
    BahdanauMonotonicAttention,
    LocationSensitiveAttention,
    LuongAttention,
    LuongAttentionCell,
    LuongMonotonicAttention,
    models,
)

QUERY, MEMORY = (2, 3, 4), (2, 5, 4)


def _floats(shape):
    return np.random.default_rng(0).normal(size=shape).astype("float32")


def _ids(shape, vocabulary):
    return np.random.default_rng(1).integers(1, vocabulary, size=shape).astype("int32")


def _attention_case(make, pooling=True):
    """Query-value form and (unless the layer carries state over steps) pooling form."""
    cases = [(make, [QUERY, MEMORY], lambda: [_floats(QUERY), _floats(MEMORY)])]
    if pooling:
        cases.append((make, (2, 5, 4), lambda: _floats((2, 5, 4))))
    return cases


# class -> [(factory, input shape(s), inputs for a real call)]
CASES = {
    AdditiveAttention: _attention_case(lambda: AdditiveAttention(3)),
    BahdanauAttention: _attention_case(lambda: BahdanauAttention(3)),
    LuongAttention: _attention_case(lambda: LuongAttention("general"))
    + _attention_case(lambda: LuongAttention("concat", attention_units=6)),
    BahdanauMonotonicAttention: _attention_case(lambda: BahdanauMonotonicAttention(3), False),
    LuongMonotonicAttention: _attention_case(lambda: LuongMonotonicAttention(), False),
    LocationSensitiveAttention: _attention_case(
        lambda: LocationSensitiveAttention(3, filters=2, kernel_size=3), False
    ),
    models.Seq2Seq: [
        (
            lambda: models.Seq2Seq(7, 9, embedding_dim=4, units=6),
            [(2, 5), (2, 3)],
            lambda: [_ids((2, 5), 7), _ids((2, 3), 9)],
        )
    ],
    models.Seq2SeqEnsemble: [
        (
            lambda: models.Seq2SeqEnsemble(
                [
                    models.Seq2Seq(7, 9, embedding_dim=4, units=6),
                    models.Seq2Seq(7, 9, embedding_dim=3, units=5, rnn="gru"),
                ]
            ),
            [(2, 5), (2, 3)],
            lambda: [_ids((2, 5), 7), _ids((2, 3), 9)],
        )
    ],
    # These leave the shapes to Keras (traced from `call`): no `compute_output_shape`.
    AttentionRNN: [
        (lambda: AttentionRNN(LuongAttentionCell(keras.layers.LSTMCell(4), LuongAttention())),)
    ],
    LuongAttentionCell: [(lambda: LuongAttentionCell(keras.layers.GRUCell(4), LuongAttention()),)],
    BahdanauAttentionCell: [
        (lambda: BahdanauAttentionCell(keras.layers.GRUCell(4), AdditiveAttention(3)),)
    ],
    models.Seq2SeqEncoder: [(lambda: models.Seq2SeqEncoder(7, 4, 6),)],
    models.Seq2SeqDecoder: [(lambda: models.Seq2SeqDecoder(9, 4, 6),)],
}


def _public_layer_classes():
    found = set()
    for module in (keras_attention, models):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) and issubclass(obj, keras.layers.Layer):
                found.add(obj)
    return found


def _implements(cls) -> bool:
    return "compute_output_shape" in {
        name
        for klass in cls.__mro__
        if klass.__module__.startswith("keras_attention")
        for name in vars(klass)
    }


def test_every_public_layer_is_covered():
    assert _public_layer_classes() == set(CASES), "add the new public layer to CASES"


SHAPED = [
    pytest.param(make, shapes, inputs, id=f"{cls.__name__}-{i}")
    for cls, cases in CASES.items()
    if _implements(cls)
    for i, (make, shapes, inputs) in enumerate(cases)
]


@pytest.mark.parametrize("make, shapes, inputs", SHAPED)
def test_keyword_input_shape_matches_positional_and_call(make, shapes, inputs):
    layer = make()
    expected = tuple(keras.ops.shape(layer(inputs())))
    assert tuple(layer.compute_output_shape(shapes)) == expected
    assert tuple(layer.compute_output_shape(input_shape=shapes)) == expected


def test_old_keyword_names_still_accepted():
    layer = LuongAttention()
    assert layer.compute_output_shape(query_shape=QUERY, value_shape=MEMORY) == (2, 3, 4)
    assert layer.compute_output_shape(input_shape=QUERY, value_shape=MEMORY) == (2, 3, 4)
    model = models.Seq2Seq(7, 9, embedding_dim=4, units=6)
    assert model.compute_output_shape(inputs_shape=[(2, 5), (2, 3)]) == (2, 3, 9)


def test_first_shape_twice_or_missing_is_a_clear_error():
    layer = LuongAttention()
    with pytest.raises(TypeError, match="once"):
        layer.compute_output_shape(input_shape=[QUERY, MEMORY], query_shape=QUERY)
    with pytest.raises(TypeError, match="Received: input_shape=None"):
        layer.compute_output_shape()
    model = models.Seq2Seq(7, 9, embedding_dim=4, units=6)
    with pytest.raises(TypeError, match="Received: input_shape=None, inputs_shape=None"):
        model.compute_output_shape()
    with pytest.raises(TypeError, match="query_shape"):
        model.compute_output_shape([(2, 5), (2, 3)], query_shape=(2, 5))


@pytest.mark.parametrize(
    "make",
    [cases[0][0] for cls, cases in CASES.items() if not _implements(cls)],
    ids=[cls.__name__ for cls in CASES if not _implements(cls)],
)
def test_layers_without_the_method_fail_alike_by_keyword(make):
    layer = make()
    with pytest.raises(NotImplementedError):
        layer.compute_output_shape([QUERY, MEMORY])
    with pytest.raises(NotImplementedError):
        layer.compute_output_shape(input_shape=[QUERY, MEMORY])

"""What both tokenizers promise: serialisation, input forms, and a clear error per bad input."""

from __future__ import annotations

import json
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention.text import CharTokenizer, WordpieceTokenizer
from tests.text.conftest import decode

TEXTS = ["Héllo wörld", "привет  мир", "", "abc\u00a0def", "世界 ok"]
CLASSES = [CharTokenizer, WordpieceTokenizer]


def adapted(cls, **kwargs):
    tokenizer = cls(**kwargs)
    tokenizer.adapt(TEXTS)
    return tokenizer


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize("lowercase", [False, True])
def test_keras_serialization_round_trip(cls, lowercase):
    tokenizer = adapted(cls, lowercase=lowercase, max_vocabulary=500)
    serialized = keras.saving.serialize_keras_object(tokenizer)
    assert serialized["registered_name"] == f"keras_attention>{cls.__name__}"
    restored = keras.saving.deserialize_keras_object(json.loads(json.dumps(serialized)))
    assert type(restored) is cls
    assert restored.get_config() == tokenizer.get_config()
    assert restored.vocabulary == tokenizer.vocabulary
    probe = TEXTS + ["HELLO unseen Ω"]
    ids = tokenizer.tokenize(probe, add_start=True, add_end=True)
    np.testing.assert_array_equal(restored.tokenize(probe, add_start=True, add_end=True), ids)
    assert decode(restored.detokenize(ids)) == decode(tokenizer.detokenize(ids))
    assert cls.from_config(tokenizer.get_config()).vocabulary == tokenizer.vocabulary


@pytest.mark.parametrize("cls", CLASSES)
def test_unadapted_config_round_trip(cls):
    config = cls(lowercase=True).get_config()
    assert config["vocabulary"] is None
    assert cls.from_config(json.loads(json.dumps(config))).get_config() == config


@pytest.mark.parametrize("cls", CLASSES)
def test_input_forms_agree(cls):
    tokenizer = adapted(cls)
    expected = tokenizer.tokenize(TEXTS).numpy()
    for form in (
        tuple(TEXTS),
        np.array(TEXTS),
        np.array([t.encode() for t in TEXTS]),
        np.array(TEXTS, dtype=object),
        tf.constant(TEXTS),
    ):
        np.testing.assert_array_equal(tokenizer.tokenize(form), expected)
    for ids in (expected, expected.astype(np.int64), tf.constant(expected)):
        assert decode(tokenizer.detokenize(ids)) == decode(tokenizer.detokenize(expected))


@pytest.mark.parametrize("cls", CLASSES)
def test_works_in_tf_data_map(cls):
    tokenizer = adapted(cls)
    dataset = tf.data.Dataset.from_tensor_slices(TEXTS).batch(2)
    dataset = dataset.map(lambda s: tokenizer.detokenize(tokenizer.tokenize(s, add_end=True)))
    round_trip = [s.decode() for batch in dataset.as_numpy_iterator() for s in batch]
    assert round_trip == decode(tokenizer.detokenize(tokenizer.tokenize(TEXTS)))


@pytest.mark.parametrize("cls", CLASSES)
def test_unadapted_tokenizer_raises(cls):
    tokenizer = cls()
    message = re.escape("call adapt(texts) first or pass vocabulary=")
    with pytest.raises(ValueError, match=message):
        tokenizer.tokenize(["a"])
    with pytest.raises(ValueError, match=message):
        tokenizer.detokenize([[4]])
    with pytest.raises(ValueError, match=message):
        tokenizer.vocabulary  # noqa: B018


CONSTRUCTOR_ERRORS = [
    ({"max_vocabulary": 0}, ValueError, "max_vocabulary=0"),
    ({"max_vocabulary": 4}, ValueError, "max_vocabulary=4"),
    ({"max_vocabulary": 2.5}, ValueError, "max_vocabulary=2.5"),
    ({"min_frequency": 0}, ValueError, "min_frequency=0"),
    ({"min_frequency": None}, ValueError, "min_frequency=None"),
    ({"lowercase": "yes"}, ValueError, "lowercase='yes'"),  # the one flag policy (issue 14)
    ({"vocabulary": "abc"}, TypeError, "vocabulary='abc'"),
    ({"vocabulary": ["a", 3]}, TypeError, "vocabulary[1]=3"),
    ({"vocabulary": ["a", "[UNK]"]}, ValueError, "vocabulary[1]='[UNK]'"),
    ({"vocabulary": ["[PAD]"]}, ValueError, "vocabulary[0]='[PAD]'"),
    ({"vocabulary": ["a", "b", "a"]}, ValueError, "vocabulary[2]='a'"),
    ({"vocabulary": [""]}, ValueError, "vocabulary[0]=''"),
    ({"vocabulary": ["a", "b"], "max_vocabulary": 5}, ValueError, "max_vocabulary=5"),
]


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize(("kwargs", "error", "message"), CONSTRUCTOR_ERRORS)
def test_constructor_errors_name_the_argument(cls, kwargs, error, message):
    with pytest.raises(error, match=re.escape(message)):
        cls(**kwargs)


@pytest.mark.parametrize(
    ("cls", "token"),
    [
        (CharTokenizer, "ab"),
        (CharTokenizer, "##"),
        (WordpieceTokenizer, "a b"),
        (WordpieceTokenizer, "##"),
        (WordpieceTokenizer, "a\n"),
    ],
)
def test_invalid_tokens_name_the_entry(cls, token):
    with pytest.raises(ValueError, match=re.escape(f"vocabulary[1]={token!r}")):
        cls(vocabulary=["x", token])


ADAPT_ERRORS = [
    ("abc", TypeError, "texts='abc'"),
    ([], ValueError, "`texts` must not be empty"),
    (["a", 5], TypeError, "texts[1]=5"),
    ([b"a", None], TypeError, "texts[1]=None"),
    (np.array([1, 2]), TypeError, "texts with dtype int64"),
    (np.array([["a"]]), ValueError, "texts with shape (1, 1)"),
    (tf.data.Dataset.from_tensor_slices([1, 2]), TypeError, "element_spec="),
    (tf.data.Dataset.from_tensor_slices(tf.constant([], tf.string)), ValueError, "not be empty"),
    ({"a": 1}, TypeError, "texts={'a': 1}"),
]


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize(("texts", "error", "message"), ADAPT_ERRORS)
def test_adapt_errors_name_the_argument(cls, texts, error, message):
    with pytest.raises(error, match=re.escape(message)):
        cls().adapt(texts)


def call_errors():
    return [
        (lambda t: t.tokenize("abc"), TypeError, "strings='abc'"),
        (lambda t: t.tokenize([["a"]]), TypeError, "strings[0]=['a']"),
        (lambda t: t.tokenize(tf.constant([["a"]])), ValueError, "strings with shape (1, 1)"),
        (lambda t: t.tokenize(tf.constant([1])), TypeError, "strings with dtype"),
        (lambda t: t.tokenize(["a"], add_start=2), ValueError, "add_start=2"),  # 0/1 are flags
        (lambda t: t.tokenize(["a"], add_end="no"), ValueError, "add_end='no'"),
        (lambda t: t.detokenize(np.zeros(3, int)), ValueError, "ids with shape (3,)"),
        (lambda t: t.detokenize(np.zeros((1, 2, 3), int)), ValueError, "ids with shape (1, 2, 3)"),
        (lambda t: t.detokenize(np.zeros((1, 2))), TypeError, "(dtype float64)"),
        (lambda t: t.detokenize(tf.zeros((1, 2))), TypeError, "ids with dtype"),
        (lambda t: t.detokenize([[4, 5], [4]]), ValueError, "ids=[[4, 5], [4]]"),
        (lambda t: t.detokenize(tf.ragged.constant([[4]])), TypeError, "`ids` must be a dense"),
    ]


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize("case", range(len(call_errors())))
def test_call_errors_name_the_argument(cls, case):
    call, error, message = call_errors()[case]
    with pytest.raises(error, match=re.escape(message)):
        call(cls(vocabulary=["a", "b"]))


@pytest.mark.parametrize("cls", CLASSES)
def test_repr(cls):
    assert repr(cls()) == f"{cls.__name__}(not adapted, lowercase=False)"
    assert repr(cls(vocabulary=["a"])) == f"{cls.__name__}(vocabulary_size=5, lowercase=False)"

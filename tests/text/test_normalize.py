"""`normalize_text`: whitespace collapsing (Unicode spaces included), stripping, lowercasing."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings

from keras_attention.text import normalize_text
from tests.text.conftest import (
    CJK,
    LETTERS,
    STRING_SIGNATURE,
    decode,
    graph_ops,
    non_core_ops,
    python_normalize,
    texts_strategy,
)


def test_unicode_spaces_collapse_to_one_ascii_space():
    out = normalize_text(["a\u00a0b", "a\u202fb", " \u2009a \u00a0\u202f\tb\n ", "\u3000", ""])
    assert decode(out) == ["a b", "a b", "a b", "", ""]


def test_whitespace_set_is_exactly_python_isspace():
    """Every code point: normalised away iff Python's str.isspace() says it is whitespace."""
    code_points = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    texts = ["x" + chr(c) + "y" for c in code_points]
    out = normalize_text(tf.constant(texts)).numpy()
    mismatched = [
        hex(c)
        for c, o in zip(code_points, out)
        if o.decode() != python_normalize("x" + chr(c) + "y")
    ]
    assert mismatched == []


@settings(deadline=None, max_examples=30)
@given(texts_strategy(LETTERS + CJK + "!?,.", max_size=8))
def test_matches_python_reference(texts):
    assert decode(normalize_text(texts)) == [python_normalize(t) for t in texts]


def test_lowercase_is_unicode_aware():
    out = normalize_text(["ÉCOLE  Привет\u00a0ÀÖ", "ΣΟΦΙΑ"], lowercase=True)
    assert decode(out) == ["école привет àö", "σοφια"]
    assert decode(normalize_text(["ÉCOLE"])) == ["ÉCOLE"]


def test_keeps_shape_and_accepts_numpy_and_tensors():
    out = normalize_text(tf.constant([[" a ", "b  c"], ["", "d"]]))
    assert out.shape == (2, 2)
    assert decode(normalize_text(np.array([" x  y "]))) == ["x y"]


def test_graph_uses_core_ops_only():
    fn = tf.function(lambda s: normalize_text(s, lowercase=True), input_signature=STRING_SIGNATURE)
    concrete = fn.get_concrete_function()
    assert non_core_ops(graph_ops(concrete)) == set()
    assert decode(fn(tf.constant([" A\u202fB "]))) == ["a b"]


def test_bad_arguments():
    with pytest.raises(ValueError, match="lowercase='yes'"):
        normalize_text(["a"], lowercase="yes")
    with pytest.raises(TypeError, match="strings"):
        normalize_text(tf.constant([1, 2]))

"""Issue 31, item 3 (b) and (d): a NUL byte no longer truncates the input, and a tokenizer that
does not fit the model (another vocabulary, or not a tokenizer at all) is refused."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from keras_attention.models import Seq2Seq, Translator
from keras_attention.text import CharTokenizer, WordpieceTokenizer, normalize_text


def _strings(tensor):
    return [s.decode("utf-8") for s in tensor.numpy()]


@pytest.mark.parametrize("lowercase", [False, True])
def test_nul_byte_is_a_character_not_the_end_of_the_string(lowercase):
    """Before: `CharTokenizer(lowercase=True).tokenize([b"ju\\x00ly 4"])` gave `[[6, 8]]`
    ("ju": `tf.strings.lower(..., encoding="utf-8")` stops at a NUL). Now the NUL is an
    unknown character and the rest of the string is tokenized, as Python's `str.lower` reads
    it."""
    tokenizer = CharTokenizer(lowercase=lowercase)
    tokenizer.adapt(["july 4"])
    text = "JU\x00LY 4" if lowercase else "ju\x00ly 4"
    expected = [tokenizer.vocabulary.index(c) if c != "\x00" else 1 for c in "ju\x00ly 4"]
    assert tokenizer.tokenize([text.encode()]).numpy().tolist() == [expected]


@pytest.mark.parametrize(
    "text",
    ["JU\x00LY 4", "\x00A", "A\x00", "\x00", "", "ÉCOLE\x00\x00Ü  X", "a\x00\x00\x00b"],
)
def test_normalize_text_lowercases_around_nul_bytes_like_python(text):
    expected = " ".join(text.split()).lower()
    assert _strings(normalize_text([text], lowercase=True)) == [expected]
    # Any shape, as before: a 2-D batch and a scalar.
    assert _strings(normalize_text([[text, "B"]], lowercase=True)[0]) == [expected, "b"]
    assert normalize_text(text, lowercase=True).numpy().decode() == expected


def test_nul_byte_through_the_wordpiece_tokenizer():
    tokenizer = WordpieceTokenizer(lowercase=True, max_vocabulary=200)
    tokenizer.adapt(["july fourth", "june first"] * 5)
    whole = tokenizer.tokenize(["JULY\x00 FOURTH"]).numpy().tolist()[0]
    # Not cut at the NUL: "fourth" is still tokenized after it.
    assert tokenizer.tokenize(["fourth"]).numpy().tolist()[0][0] in whole


@pytest.fixture(scope="module")
def tokenizers():
    source = CharTokenizer(vocabulary=list("abcdef "))
    target = CharTokenizer(vocabulary=list("uvwxyz"))
    return source, target


def test_tokenizer_with_another_vocabulary_size_is_refused(tokenizers):
    """Before: `Seq2Seq(target_vocabulary_size=20, target_tokenizer=<10 ids>)` was accepted and
    `translate` returned '������' (ids past the tokenizer's vocabulary)."""
    source, target = tokenizers
    with pytest.raises(ValueError, match=r"target_tokenizer.vocabulary_size=10.*=20"):
        Seq2Seq(target_vocabulary_size=20, source_tokenizer=source, target_tokenizer=target)
    with pytest.raises(ValueError, match=r"source_tokenizer.vocabulary_size=11.*=30"):
        Seq2Seq(source_vocabulary_size=30, source_tokenizer=source, target_tokenizer=target)
    model = Seq2Seq(embedding_dim=4, units=4, source_tokenizer=source, target_tokenizer=target)
    with pytest.raises(ValueError, match="target_tokenizer.vocabulary_size=11"):
        Translator(model, target_tokenizer=source)
    other = Seq2Seq(11, 10, embedding_dim=4, units=4)
    with pytest.raises(ValueError, match="source_tokenizer.vocabulary_size=10"):
        Translator(other, source_tokenizer=target, target_tokenizer=target)


@pytest.mark.parametrize("bad", ["char", b"char", 5, ["a", "b"]])
def test_something_else_than_a_tokenizer_is_refused(tokenizers, bad):
    """Before: a string passed as `source_tokenizer` was accepted (and failed, or not, later)."""
    source, target = tokenizers
    with pytest.raises(TypeError, match="source_tokenizer"):
        Seq2Seq(12, 10, source_tokenizer=bad, target_tokenizer=target)
    model = Seq2Seq(11, 10, embedding_dim=4, units=4)
    with pytest.raises(TypeError, match="target_tokenizer"):
        Translator(model, source_tokenizer=source, target_tokenizer=bad)


def test_tokenizer_without_vocabulary_is_refused():
    with pytest.raises(ValueError, match="no vocabulary"):
        Seq2Seq(12, 10, source_tokenizer=CharTokenizer())


def test_matching_tokenizers_still_translate(tokenizers):
    source, target = tokenizers
    keras.utils.set_random_seed(0)
    model = Seq2Seq(
        11, 10, embedding_dim=4, units=4, source_tokenizer=source, target_tokenizer=target
    )
    out = model.translate(["abc", "fed"], max_length=4, jit_compile=False)
    assert all(set(s) <= set("uvwxyz") for s in out), out
    assert np.asarray(source.tokenize(["abc"])).shape == (1, 3)

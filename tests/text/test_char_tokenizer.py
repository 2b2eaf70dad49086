"""`CharTokenizer`: exact ids, round trips over several scripts, UNK, END, padding, graphs."""

from __future__ import annotations

import numpy as np
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from keras_attention.text import END_ID, PAD_ID, START_ID, UNK_ID, CharTokenizer
from tests.text.conftest import (
    ARABIC,
    CJK,
    CYRILLIC,
    LATIN,
    STRING_SIGNATURE,
    decode,
    graph_ops,
    non_core_ops,
    python_normalize,
    texts_strategy,
)

ALPHABET = LATIN + CYRILLIC + CJK + ARABIC
VOCABULARY = list("aé бж世ب")  # a subset: the rest of ALPHABET is unknown


def reference_ids(text: str, vocabulary: list[str]) -> list[int]:
    """Pure-Python transcription: ids of the normalised text's characters."""
    full = ["[PAD]", "[UNK]", "[START]", "[END]"] + vocabulary
    return [full.index(ch) if ch in full[4:] else UNK_ID for ch in python_normalize(text)]


def padded(rows: list[list[int]]) -> list[list[int]]:
    width = max((len(row) for row in rows), default=0)
    return [row + [PAD_ID] * (width - len(row)) for row in rows]


@settings(deadline=None, max_examples=25)
@given(texts_strategy(ALPHABET))
def test_round_trip_after_adapt(texts):
    tokenizer = CharTokenizer()
    tokenizer.adapt(texts)
    ids = tokenizer.tokenize(texts)
    assert UNK_ID not in ids.numpy()
    assert decode(tokenizer.detokenize(ids)) == [python_normalize(t) for t in texts]


@settings(deadline=None, max_examples=25)
@given(texts_strategy(ALPHABET))
def test_ids_match_python_reference_with_unknowns(texts):
    tokenizer = CharTokenizer(vocabulary=VOCABULARY)
    ids = tokenizer.tokenize(texts)
    expected = padded([reference_ids(t, VOCABULARY) for t in texts])
    assert ids.dtype == tf.int32
    assert ids.numpy().tolist() == expected
    unknown_as_replacement = [
        "".join(ch if ch in VOCABULARY else "\ufffd" for ch in python_normalize(t)) for t in texts
    ]
    assert decode(tokenizer.detokenize(ids)) == unknown_as_replacement


def test_hand_computed_ids_padding_start_end():
    tokenizer = CharTokenizer(vocabulary=["a", "b", " "])
    ids = tokenizer.tokenize(["ab", "b\u00a0 a  ", "", "zz"])
    assert ids.numpy().tolist() == [[4, 5, 0], [5, 6, 4], [0, 0, 0], [1, 1, 0]]
    ids = tokenizer.tokenize(["ab", ""], add_start=True, add_end=True)
    assert ids.numpy().tolist() == [[START_ID, 4, 5, END_ID], [START_ID, END_ID, 0, 0]]
    assert tokenizer.tokenize(["", ""], add_end=True).numpy().tolist() == [[END_ID], [END_ID]]
    assert tokenizer.tokenize(["", ""]).shape == (2, 0)
    assert tokenizer.tokenize([]).shape == (0, 0)


def test_detokenize_stops_at_end_and_drops_pad_and_start():
    tokenizer = CharTokenizer(vocabulary=["a", "b"])
    ids = np.array(
        [
            [START_ID, 4, 5, END_ID, 4, 4],  # everything after END is ignored
            [4, PAD_ID, 5, START_ID, 4, PAD_ID],  # pads and starts are dropped anywhere
            [END_ID, 4, 5, 5, 5, 5],
            [UNK_ID, 99, -3, 4, PAD_ID, PAD_ID],  # out-of-range ids are unknown
        ],
        dtype=np.int64,
    )
    assert decode(tokenizer.detokenize(ids)) == ["ab", "aba", "", "\ufffd\ufffd\ufffda"]
    assert decode(tokenizer.detokenize(tf.constant(ids, tf.int32))) == decode(
        tokenizer.detokenize(ids)
    )


def test_lowercase():
    tokenizer = CharTokenizer(lowercase=True)
    tokenizer.adapt(["ÉCOLE Привет"])
    assert "É" not in tokenizer.vocabulary and "é" in tokenizer.vocabulary
    assert decode(tokenizer.detokenize(tokenizer.tokenize(["École ПРИВЕТ"]))) == ["école привет"]


def test_adapt_orders_by_frequency_then_character_and_is_deterministic():
    texts = ["cbbaaa", "ddd", "e", "  x\u00a0 y "]
    tokenizer = CharTokenizer()
    tokenizer.adapt(texts)
    # a:3 d:3 b:2, then count-1 characters in code point order (" " < "c" < "e" < "x" < "y").
    assert tokenizer.vocabulary[4:] == ["a", "d", "b", " ", "c", "e", "x", "y"]
    for same_texts in (
        list(texts),
        tuple(texts),
        np.array(texts),
        np.array([t.encode() for t in texts]),
        tf.constant(texts),
        tf.data.Dataset.from_tensor_slices(texts),
        tf.data.Dataset.from_tensor_slices(texts).batch(3),
    ):
        again = CharTokenizer()
        again.adapt(same_texts)
        assert again.vocabulary == tokenizer.vocabulary


def test_max_vocabulary_and_min_frequency():
    texts = ["aaaa", "bbb", "cc", "d"]
    tokenizer = CharTokenizer(max_vocabulary=6)  # 4 specials + 2 characters
    tokenizer.adapt(texts)
    assert tokenizer.vocabulary[4:] == ["a", "b"] and tokenizer.vocabulary_size == 6
    assert tokenizer.tokenize(["abcd"]).numpy().tolist() == [[4, 5, UNK_ID, UNK_ID]]
    tokenizer = CharTokenizer(min_frequency=3)
    tokenizer.adapt(texts)
    assert tokenizer.vocabulary[4:] == ["a", "b"]


def test_properties_and_adapt_replaces_vocabulary():
    tokenizer = CharTokenizer(vocabulary=["x"])
    assert (tokenizer.pad_id, tokenizer.unk_id, tokenizer.start_id, tokenizer.end_id) == (
        0,
        1,
        2,
        3,
    )
    assert tokenizer.vocabulary == ["[PAD]", "[UNK]", "[START]", "[END]", "x"]
    tokenizer.adapt(["yy"])
    assert tokenizer.vocabulary[4:] == ["y"] and tokenizer.vocabulary_size == 5


def test_empty_vocabulary_maps_everything_to_unk():
    tokenizer = CharTokenizer()
    tokenizer.adapt(["", "   "])
    assert tokenizer.vocabulary_size == 4
    assert tokenizer.tokenize(["ab"]).numpy().tolist() == [[UNK_ID, UNK_ID]]


@settings(deadline=None, max_examples=10)
@given(texts_strategy(ALPHABET), st.booleans(), st.booleans())
def test_tf_function_equals_eager(texts, add_start, add_end):
    tokenizer = CharTokenizer(vocabulary=VOCABULARY)
    encode = tf.function(
        lambda s: tokenizer.tokenize(s, add_start=add_start, add_end=add_end),
        input_signature=STRING_SIGNATURE,
    )
    ids = encode(tf.constant(texts))
    expected = tokenizer.tokenize(texts, add_start=add_start, add_end=add_end)
    assert ids.numpy().tolist() == expected.numpy().tolist()


def test_graph_has_no_tf_text_ops_no_tables_no_captures():
    tokenizer = CharTokenizer(vocabulary=VOCABULARY, lowercase=True)
    encode = tf.function(
        lambda s: tokenizer.tokenize(s, add_start=True, add_end=True),
        input_signature=STRING_SIGNATURE,
    ).get_concrete_function()
    decode_fn = tf.function(
        tokenizer.detokenize, input_signature=[tf.TensorSpec([None, None], tf.int64)]
    ).get_concrete_function()
    for concrete in (encode, decode_fn):
        ops = graph_ops(concrete)
        assert non_core_ops(ops) == set()
        assert not [op for op in ops if "Table" in op or "Lookup" in op]
        assert list(concrete.captured_inputs) == []
    assert "UnicodeDecodeWithOffsets" in graph_ops(encode)  # the check does see the ops

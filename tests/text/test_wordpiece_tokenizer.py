"""`WordpieceTokenizer`: greedy longest-match ids, learned vocabularies, round trips, graphs."""

from __future__ import annotations

import random

import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from keras_attention.text import END_ID, START_ID, UNK_ID, WordpieceTokenizer
from tests.text.conftest import (
    LETTERS,
    STRING_SIGNATURE,
    decode,
    graph_ops,
    non_core_ops,
    python_normalize,
    words_texts_strategy,
)

VOCABULARY = ["a", "b", "ab", "abc", "##a", "##b", "##c", "##bc", "ca"]


def reference_ids(text: str, vocabulary: list[str]) -> list[int]:
    """Pure-Python WordPiece (greedy longest match first) for text without punctuation."""
    full = ["[PAD]", "[UNK]", "[START]", "[END]"] + vocabulary
    ids = []
    for word in python_normalize(text).split(" ") if text.strip() else []:
        pieces, start = [], 0
        while start < len(word):
            for end in range(len(word), start, -1):
                piece = ("##" if start else "") + word[start:end]
                if piece in full[4:]:
                    pieces.append(full.index(piece))
                    start = end
                    break
            else:
                pieces = [UNK_ID]
                break
        ids.extend(pieces)
    return ids


@settings(deadline=None, max_examples=30)
@given(words_texts_strategy("abc"))
def test_ids_match_python_reference(texts):
    tokenizer = WordpieceTokenizer(vocabulary=VOCABULARY)
    rows = [reference_ids(t, VOCABULARY) for t in texts]
    width = max(len(row) for row in rows)
    expected = [row + [0] * (width - len(row)) for row in rows]
    assert tokenizer.tokenize(texts).numpy().tolist() == expected


def test_hand_computed_ids_and_detokenize():
    tokenizer = WordpieceTokenizer(vocabulary=VOCABULARY)
    ids = tokenizer.tokenize(["abc  cab", "abab c", ""], add_start=True, add_end=True)
    # abc | ca ##b | ab ##a ##b | c -> UNK (no "c" piece)
    assert ids.numpy().tolist() == [
        [START_ID, 7, 12, 9, END_ID, 0],
        [START_ID, 6, 8, 9, UNK_ID, END_ID],
        [START_ID, END_ID, 0, 0, 0, 0],
    ]
    assert decode(tokenizer.detokenize(ids)) == ["abc cab", "abab [UNK]", ""]
    # END stops a row; pads and starts are dropped.
    assert decode(tokenizer.detokenize([[7, 0, 12, END_ID, 4, 5], [END_ID, 4, 4, 4, 4, 4]])) == [
        "abc ca",
        "",
    ]


@settings(deadline=None, max_examples=8)
@given(words_texts_strategy(LETTERS), st.booleans())
def test_learned_vocabulary_round_trips_training_text(texts, lowercase):
    tokenizer = WordpieceTokenizer(lowercase=lowercase)
    tokenizer.adapt(texts)
    ids = tokenizer.tokenize(texts, add_start=True, add_end=True)
    assert UNK_ID not in ids.numpy()
    normalized = [python_normalize(t) for t in texts]
    if lowercase:
        normalized = [t.lower() for t in normalized]
    assert decode(tokenizer.detokenize(ids)) == normalized


def synthetic_corpus(count: int = 400, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    syllables = ["ka", "to", "ri", "mo", "su", "na", "жи", "ва", "lé", "qu", "an"]
    words = ["".join(rng.choices(syllables, k=rng.randint(1, 4))) for _ in range(120)]
    return [" ".join(rng.choices(words, k=rng.randint(3, 10))) for _ in range(count)]


def test_adapt_is_deterministic_and_respects_max_vocabulary():
    corpus = synthetic_corpus()
    first = WordpieceTokenizer(max_vocabulary=80)
    first.adapt(corpus)
    second = WordpieceTokenizer(max_vocabulary=80)
    second.adapt(tf.data.Dataset.from_tensor_slices(corpus))
    assert first.vocabulary == second.vocabulary
    assert first.vocabulary_size <= 80
    assert first.vocabulary[:4] == ["[PAD]", "[UNK]", "[START]", "[END]"]
    # Every training word is still spelled without UNK, and comes back.
    ids = first.tokenize(corpus[:50])
    assert UNK_ID not in ids.numpy()
    assert decode(first.detokenize(ids)) == corpus[:50]
    # A bigger budget learns whole words: fewer pieces per sentence.
    bigger = WordpieceTokenizer(max_vocabulary=400)
    bigger.adapt(corpus)
    assert bigger.vocabulary_size > first.vocabulary_size
    assert (bigger.tokenize(corpus) > 0).numpy().sum() < (first.tokenize(corpus) > 0).numpy().sum()


def test_min_frequency_keeps_rare_words_out():
    texts = ["the cat sat", "the cats sat", "a cat"]
    rare = WordpieceTokenizer(min_frequency=1)
    rare.adapt(texts)
    assert "cats" in rare.vocabulary
    frequent = WordpieceTokenizer(min_frequency=2)
    frequent.adapt(texts)
    assert "cats" not in frequent.vocabulary and "cat" in frequent.vocabulary
    ids = frequent.tokenize(["cats"]).numpy()[0].tolist()
    assert [frequent.vocabulary[i] for i in ids] == ["cat", "##s"]


def test_punctuation_and_cjk_are_separate_words():
    tokenizer = WordpieceTokenizer()
    tokenizer.adapt(["it's ok, 世界"])
    ids = tokenizer.tokenize(["it's ok, 世界"])
    assert UNK_ID not in ids.numpy()
    assert decode(tokenizer.detokenize(ids)) == ["it ' s ok , 世 界"]


def test_empty_vocabulary_maps_every_word_to_unk():
    tokenizer = WordpieceTokenizer()
    tokenizer.adapt(["", "  \u00a0 "])
    assert tokenizer.vocabulary_size == 4
    ids = tokenizer.tokenize(["ab cd", "", "\U0010ffff"])
    assert ids.numpy().tolist() == [[UNK_ID, UNK_ID], [0, 0], [UNK_ID, 0]]
    assert decode(tokenizer.detokenize(ids)) == ["[UNK] [UNK]", "", "[UNK]"]


def test_unknown_and_too_long_words_are_unk():
    tokenizer = WordpieceTokenizer(vocabulary=["a", "##a"])
    assert tokenizer.tokenize(["a b aa", "a" * 101]).numpy().tolist() == [
        [4, UNK_ID, 4, 5],
        [UNK_ID, 0, 0, 0],
    ]
    assert decode(tokenizer.detokenize([[4, UNK_ID, 99]])) == ["a [UNK] [UNK]"]


@settings(deadline=None, max_examples=10)
@given(words_texts_strategy("abc"), st.booleans(), st.booleans())
def test_tf_function_equals_eager(texts, add_start, add_end):
    tokenizer = WordpieceTokenizer(vocabulary=VOCABULARY)
    encode = tf.function(
        lambda s: tokenizer.tokenize(s, add_start=add_start, add_end=add_end),
        input_signature=STRING_SIGNATURE,
    )
    expected = tokenizer.tokenize(texts, add_start=add_start, add_end=add_end)
    assert encode(tf.constant(texts)).numpy().tolist() == expected.numpy().tolist()


def test_graph_model_is_a_constant_not_a_resource():
    tokenizer = WordpieceTokenizer(vocabulary=VOCABULARY)
    encode = tf.function(tokenizer.tokenize, input_signature=STRING_SIGNATURE)
    concrete = encode.get_concrete_function()
    ops = graph_ops(concrete)
    assert list(concrete.captured_inputs) == []
    assert not [op for op in ops if "Table" in op or "Resource" in op or "VarHandle" in op]
    assert non_core_ops(ops) == {"FastWordpieceTokenizeWithOffsets"}

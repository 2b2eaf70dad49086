"""`pairs_dataset`: teacher-forcing shift, per-batch padding, shuffling and its errors."""

from __future__ import annotations

import re

import numpy as np
import pytest
import tensorflow as tf

from keras_attention.text import (
    END_ID,
    START_ID,
    CharTokenizer,
    WordpieceTokenizer,
    pairs_dataset,
)

SOURCES = ["ab", "a", "bbb", "", "ba"]
TARGETS = ["b", "ba", "", "aaaa", "a"]


def char_tokenizer():
    return CharTokenizer(vocabulary=["a", "b"])


def as_lists(dataset):
    return [
        (inputs["source_ids"].numpy().tolist(), inputs["target_ids"].numpy().tolist(), y.tolist())
        for inputs, y in ((x, y.numpy()) for x, y in dataset)
    ]


def test_hand_computed_batches():
    tok = char_tokenizer()
    batches = as_lists(pairs_dataset(SOURCES, TARGETS, tok, tok, batch_size=2, pad_to_multiple=1))
    assert len(batches) == 3
    source, target_ids, labels = batches[0]
    assert source == [[4, 5, END_ID], [4, END_ID, 0]]
    # targets: [START b END 0], [START b a END] -> labels drop the first column, inputs the
    # last, and inputs are padding wherever the label is (END is never an input)
    assert target_ids == [[START_ID, 5, 0], [START_ID, 5, 4]]
    assert labels == [[5, END_ID, 0], [5, 4, END_ID]]
    source, target_ids, labels = batches[2]  # the last, smaller batch: padded on its own
    assert source == [[5, 4, END_ID]]
    assert target_ids == [[START_ID, 4]] and labels == [[4, END_ID]]


@pytest.mark.parametrize("multiple", [3, 8])
def test_lengths_are_rounded_up_to_the_multiple(multiple):
    """Padding to a multiple (few distinct shapes for XLA) only appends zeros."""
    tok = char_tokenizer()
    plain = as_lists(pairs_dataset(SOURCES, TARGETS, tok, tok, batch_size=2, pad_to_multiple=1))
    rounded = as_lists(
        pairs_dataset(SOURCES, TARGETS, tok, tok, batch_size=2, pad_to_multiple=multiple)
    )
    for batch, padded in zip(plain, rounded):
        for rows, padded_rows in zip(batch, padded):
            width = len(padded_rows[0])
            assert width % multiple == 0 and width >= len(rows[0]) > width - multiple
            for row, padded_row in zip(rows, padded_rows):
                assert padded_row == row + [0] * (width - len(row))


def test_shift_and_padding_invariants():
    tok = char_tokenizer()
    dataset = pairs_dataset(SOURCES * 3, TARGETS * 3, tok, tok, batch_size=4)
    spec_inputs, spec_labels = dataset.element_spec
    assert set(spec_inputs) == {"source_ids", "target_ids"}
    assert all(s.dtype == tf.int32 for s in (*spec_inputs.values(), spec_labels))
    for inputs, labels in dataset:
        target_ids, labels = inputs["target_ids"].numpy(), labels.numpy()
        assert target_ids.shape == labels.shape
        np.testing.assert_array_equal(
            target_ids[:, 1:], np.where(labels[:, 1:] == 0, 0, labels[:, :-1])
        )
        np.testing.assert_array_equal(target_ids != 0, labels != 0)  # one mask for both
        assert (target_ids[:, 0] == START_ID).all()
        # Each label row is the target, END, then only padding.
        for row in labels:
            end = list(row).index(END_ID)
            assert (row[end + 1 :] == 0).all() and (row[:end] > 3).all()


def test_shuffle_is_seeded_permutation_and_wordpiece_works():
    tokenizer = WordpieceTokenizer()
    sources = [f"word{i} x" for i in range(20)]
    tokenizer.adapt(sources)
    unshuffled = pairs_dataset(sources, sources, tokenizer, tokenizer, batch_size=20)
    shuffled = pairs_dataset(
        sources, sources, tokenizer, tokenizer, batch_size=20, shuffle=True, seed=3
    )
    again = pairs_dataset(
        sources, sources, tokenizer, tokenizer, batch_size=20, shuffle=True, seed=3
    )
    (plain, _), (first, _), (second, _) = (next(iter(d)) for d in (unshuffled, shuffled, again))
    decoded = [s.decode() for s in tokenizer.detokenize(first["source_ids"]).numpy()]
    assert sorted(decoded) == sorted(sources) and decoded != sources
    np.testing.assert_array_equal(first["source_ids"], second["source_ids"])
    assert [s.decode() for s in tokenizer.detokenize(plain["source_ids"]).numpy()] == sources


def test_accepts_arrays_and_tensors():
    tok = char_tokenizer()
    expected = as_lists(pairs_dataset(SOURCES, TARGETS, tok, tok, batch_size=3))
    for form in (np.array, tf.constant, tuple):
        got = as_lists(pairs_dataset(form(SOURCES), form(TARGETS), tok, tok, batch_size=3))
        assert got == expected


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"targets": ["a"]}, ValueError, "len(sources)=5, len(targets)=1"),
        ({"sources": [], "targets": []}, ValueError, "must not be empty"),
        ({"batch_size": 0}, ValueError, "batch_size=0"),
        ({"shuffle": "yes"}, ValueError, "shuffle='yes'"),
        ({"seed": 1.5}, ValueError, "seed=1.5"),
        ({"pad_to_multiple": 0}, ValueError, "pad_to_multiple=0"),
        ({"sources": "ab"}, TypeError, "sources='ab'"),
        ({"targets": [1, 2, 3, 4, 5]}, TypeError, "targets[0]=1"),
        ({"source_tokenizer": "char"}, TypeError, "source_tokenizer='char'"),
        ({"target_tokenizer": CharTokenizer()}, ValueError, "call adapt(texts) first"),
    ],
)
def test_errors_name_the_argument(kwargs, error, message):
    arguments = {
        "sources": SOURCES,
        "targets": TARGETS,
        "source_tokenizer": char_tokenizer(),
        "target_tokenizer": char_tokenizer(),
    }
    arguments.update(kwargs)
    with pytest.raises(error, match=re.escape(message)):
        pairs_dataset(**arguments)

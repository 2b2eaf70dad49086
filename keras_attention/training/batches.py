"""`BucketedBatches`: teacher-forcing batches of pairs of similar length, one shape per bucket."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from keras_attention._validation import check_int

__all__ = ["BucketedBatches", "length_buckets"]

PAD_ID, START_ID, END_ID = 0, 2, 3


def length_buckets(lengths: Sequence[int], buckets: int = 5) -> tuple[int, ...]:
    """Upper bounds of `buckets` length buckets from the lengths' quantiles (the last bound is
    the longest length), so that each bucket holds about as many pairs and pads to its bound.

    >>> length_buckets([3, 4, 4, 5, 6, 7, 8, 9, 12, 20], buckets=3)
    (5, 8, 20)
    """
    buckets = check_int("buckets", buckets, minimum=1)
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or not len(lengths) or lengths.min() < 1:
        raise ValueError(
            f"`lengths` must be a non-empty list of lengths >= 1. Received: lengths={lengths!r}"
        )
    quantiles = np.quantile(lengths, np.arange(1, buckets) / buckets, method="higher")
    return tuple(sorted({*(int(q) for q in quantiles), int(lengths.max())}))


class BucketedBatches:
    """Batches of `(source, target)` id sequences of similar length for teacher forcing.

    A pair's length is `max(len(source), len(target)) + 1` (the end token); each bucket of
    `bounds` pads its pairs' sources (`ids + [END]`), decoder inputs (`[START] + target`)
    and labels (`target + [END]`) to its upper bound, so a compiled training step sees one
    shape per bucket. Batches are drawn within a bucket and shuffled across buckets every
    epoch; a bucket's last partial batch is dropped each epoch (other pairs each time) unless
    the bucket holds fewer pairs than one batch. Iterating gives one epoch of
    `({"source_ids", "target_ids"}, labels)` NumPy batches; `dataset()` is the `tf.data`
    pipeline `fit` reads (TensorFlow backend).

    Args:
        sources: Source id sequences (ids >= 4, no end token).
        targets: Target id sequences (ids >= 4, no start or end token), one per source.
        batch_size: Pairs per batch.
        bounds: Upper bounds of the buckets' lengths, ascending. Defaults to `None`:
            `length_buckets` of the pairs' lengths. Pairs longer than the last bound go into
            one more bucket of the longest length.
        seed: Seed of the batch order. Defaults to `0`.
        shuffle: Whether to shuffle (and drop partial batches). Defaults to `True`.
    """

    def __init__(
        self,
        sources: Sequence[Sequence[int]],
        targets: Sequence[Sequence[int]],
        batch_size: int,
        bounds: Sequence[int] | None = None,
        seed: int = 0,
        shuffle: bool = True,
    ) -> None:
        self.batch_size = check_int("batch_size", batch_size, minimum=1)
        if len(sources) != len(targets) or not len(sources):
            raise ValueError(
                "`sources` and `targets` must be non-empty and of one length. Received: "
                f"{len(sources)} sources, {len(targets)} targets"
            )
        self.shuffle = bool(shuffle)
        self.rng = np.random.default_rng(seed)
        lengths = np.array([max(len(s), len(t)) + 1 for s, t in zip(sources, targets)])
        bounds = length_buckets(lengths) if bounds is None else tuple(int(b) for b in bounds)
        self.buckets = []
        lower = 0
        for upper in (*bounds, max(int(lengths.max()), bounds[-1] + 1)):
            members = np.flatnonzero((lengths > lower) & (lengths <= upper))
            lower = upper
            if len(members):
                self.buckets.append(
                    _encode([sources[i] for i in members], [targets[i] for i in members], upper)
                )
        self.on_epoch_end()

    def on_epoch_end(self) -> None:
        """Draw the next epoch's batch order."""
        self.batches = []
        for b, (source, _, _) in enumerate(self.buckets):
            order = self.rng.permutation(len(source)) if self.shuffle else np.arange(len(source))
            full = len(order) // self.batch_size * self.batch_size
            if full and self.shuffle:
                order = order[:full]
            for start in range(0, len(order), self.batch_size):
                self.batches.append((b, order[start : start + self.batch_size]))
        if self.shuffle:
            self.batches = [self.batches[i] for i in self.rng.permutation(len(self.batches))]

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self):
        for bucket, rows in self.batches:
            source, inputs, labels = self.buckets[bucket]
            yield {"source_ids": source[rows], "target_ids": inputs[rows]}, labels[rows]
        self.on_epoch_end()  # a new order for the next pass

    def dataset(self):
        """A `tf.data.Dataset` of one epoch of batches (a new order on every pass), with its
        cardinality set (TensorFlow backend)."""
        import tensorflow as tf

        ids = tf.TensorSpec([None, None], tf.int32)
        dataset = tf.data.Dataset.from_generator(
            lambda: iter(self), output_signature=({"source_ids": ids, "target_ids": ids}, ids)
        )
        return dataset.apply(tf.data.experimental.assert_cardinality(len(self))).prefetch(2)


def _encode(sources, targets, length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sources `ids + [END]`, decoder inputs `[START] + ids` and labels `ids + [END]`, padded
    with 0 to `length` columns."""
    source = np.zeros((len(sources), length), "int32")
    inputs = np.zeros((len(targets), length), "int32")
    labels = np.zeros((len(targets), length), "int32")
    for row, (s, t) in enumerate(zip(sources, targets)):
        source[row, : len(s) + 1] = [*s, END_ID]
        inputs[row, : len(t) + 1] = [START_ID, *t]
        labels[row, : len(t) + 1] = [*t, END_ID]
    return source, inputs, labels

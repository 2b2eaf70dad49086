"""`pairs_dataset`: a teacher-forcing `tf.data` pipeline from parallel source/target text."""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from keras_attention._validation import check_flag, check_int
from keras_attention.text._inputs import string_batch
from keras_attention.text.base_tokenizer import BaseTokenizer

__all__ = ["pairs_dataset"]


def pairs_dataset(
    sources: Any,
    targets: Any,
    source_tokenizer: BaseTokenizer,
    target_tokenizer: BaseTokenizer,
    batch_size: int = 64,
    shuffle: bool = False,
    seed: int | None = None,
    pad_to_multiple: int = 8,
) -> tf.data.Dataset:
    """Batches of `({"source_ids", "target_ids"}, labels)` for training a seq2seq model.

    Each batch of raw pairs is tokenized inside the pipeline (batch first, then tokenize, so
    rows are padded to the longest row of their batch):
    `source_ids = source_tokenizer.tokenize(src, add_end=True)` and, with
    `target = target_tokenizer.tokenize(tgt, add_start=True, add_end=True)`,
    `labels = target[:, 1:]` (the next token) and `target_ids = target[:, :-1]` (the decoder
    input) with 0 wherever the label is 0 (END is never an input). Padding is `0`
    everywhere, so the model's mask (`mask_zero=True` on `target_ids`) covers exactly the
    positions that have a label. The dataset is prefetched.

    Args:
        sources: Source sentences: a list/tuple of `str`, 1-D numpy array or rank-1
            `tf.string` tensor.
        targets: Target sentences, as many as `sources`.
        source_tokenizer: An adapted `CharTokenizer` or `WordpieceTokenizer` for sources.
        target_tokenizer: An adapted tokenizer for targets (may be the same object).
        batch_size: Pairs per batch (the last batch may be smaller). Defaults to `64`.
        shuffle: Whether to shuffle the pairs (over the whole set, anew each epoch) before
            batching. Defaults to `False`.
        seed: Optional shuffle seed. Defaults to `None`.
        pad_to_multiple: Pad source and target lengths up to a multiple of this. A model
            compiled with XLA (`jit_compile=True`) compiles one program per distinct batch
            shape; rounding lengths keeps that to a handful. `1` pads to the longest row
            only. Defaults to `8`.

    Returns:
        A `tf.data.Dataset` of `({"source_ids": [B, S], "target_ids": [B, T]}, labels
        [B, T])`, all `tf.int32`.

    Example:

    >>> from keras_attention.text import CharTokenizer
    >>> tokenizer = CharTokenizer(vocabulary=["a", "b"])
    >>> dataset = pairs_dataset(["ab", "a"], ["b", "ba"], tokenizer, tokenizer, batch_size=2,
    ...                         pad_to_multiple=1)
    >>> inputs, labels = next(iter(dataset))
    >>> inputs["source_ids"].numpy().tolist()
    [[4, 5, 3], [4, 3, 0]]
    >>> inputs["target_ids"].numpy().tolist(), labels.numpy().tolist()
    ([[2, 5, 0], [2, 5, 4]], [[5, 3, 0], [5, 4, 3]])
    """
    for name, tokenizer in (
        ("source_tokenizer", source_tokenizer),
        ("target_tokenizer", target_tokenizer),
    ):
        if not isinstance(tokenizer, BaseTokenizer):
            raise TypeError(
                f"`{name}` must be a CharTokenizer or WordpieceTokenizer. Received: "
                f"{name}={tokenizer!r:.200}"
            )
        tokenizer.vocabulary_size  # noqa: B018 (raises a clear error when not adapted)
    sources = string_batch("sources", sources)
    targets = string_batch("targets", targets)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    shuffle = check_flag("shuffle", shuffle)
    if seed is not None:
        seed = check_int("seed", seed)
    multiple = check_int("pad_to_multiple", pad_to_multiple, minimum=1)
    count = sources.shape[0]
    if count is None or targets.shape[0] is None:
        raise ValueError("`sources` and `targets` must have a known length (eager tensors).")
    if count != targets.shape[0]:
        raise ValueError(
            "`sources` and `targets` must have the same length. Received: "
            f"len(sources)={count}, len(targets)={targets.shape[0]}"
        )
    if count == 0:
        raise ValueError("`sources` and `targets` must not be empty. Received: 0 pairs")

    def pad(ids, extra=0):
        """Right-pad `[B, L]` so that `L - extra` is a multiple of `multiple`."""
        length = tf.shape(ids)[1] - extra
        return tf.pad(ids, [[0, 0], [0, (multiple - length % multiple) % multiple]])

    def to_batch(source, target):
        # START + target + END: the decoder input and the labels are one shorter.
        target = pad(target_tokenizer.tokenize(target, add_start=True, add_end=True), extra=1)
        labels = target[:, 1:]
        # The decoder input is padding wherever the label is: END is never fed as an input,
        # so the Keras mask of `target_ids` is exactly the set of positions with a label.
        target_ids = tf.where(labels == 0, 0, target[:, :-1])
        inputs = {
            "source_ids": pad(source_tokenizer.tokenize(source, add_end=True)),
            "target_ids": target_ids,
        }
        return inputs, labels

    dataset = tf.data.Dataset.from_tensor_slices((sources, targets))
    if shuffle:
        dataset = dataset.shuffle(count, seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.batch(batch_size)
    dataset = dataset.map(to_batch, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return dataset.prefetch(tf.data.AUTOTUNE)

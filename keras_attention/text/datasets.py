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
    num_shards: int = 1,
    shard_index: int = 0,
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
        num_shards: Split the pairs over this many workers, each building its own pipeline
            with its `shard_index`: worker `i` keeps pairs `i, i + num_shards, ...` before
            shuffling, tokenizing and batching (so it reads and tokenizes only its share,
            shuffled with its own seed), `batch_size` is then the batch of one worker, and
            the pipeline's auto-shard policy is set to `OFF` (a
            `tf.distribute.MultiWorkerMirroredStrategy` must not shard it again; with
            `keras.distribution.DataParallel` set `auto_shard_dataset=False`). Every worker
            must get the same number of batches in an epoch (a collective step waits for
            all): choose sizes that divide evenly or pass `steps_per_epoch`. With the
            default `1` the dataset holds every pair and the distribution shards it: a
            strategy's auto-shard policy (by data) or `DataParallel(auto_shard_dataset=True)`
            gives each worker its part of every global batch of `batch_size`, which is
            right only when every worker shuffles alike: pass the same `seed` on every
            worker when `shuffle=True` (docs/scaling.md). Defaults to `1`.
        shard_index: This worker's shard, in `[0, num_shards)`. Defaults to `0`.

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
    _check_tokenizers(source_tokenizer, target_tokenizer)
    sources = string_batch("sources", sources)
    targets = string_batch("targets", targets)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    shuffle = check_flag("shuffle", shuffle)
    if seed is not None:
        seed = check_int("seed", seed)
    multiple = check_int("pad_to_multiple", pad_to_multiple, minimum=1)
    num_shards = check_int("num_shards", num_shards, minimum=1)
    shard_index = check_int("shard_index", shard_index, minimum=0)
    if shard_index >= num_shards:
        raise ValueError(
            "`shard_index` must be in [0, num_shards). "
            f"Received: shard_index={shard_index}, num_shards={num_shards}"
        )
    count = _pair_count(sources, targets)
    to_batch = _batch_tokenizer(source_tokenizer, target_tokenizer, multiple)
    dataset = tf.data.Dataset.from_tensor_slices((sources, targets))
    if num_shards > 1:  # this worker's pairs only; a strategy must not shard them again
        dataset = dataset.shard(num_shards, shard_index)
        count = max(len(range(shard_index, count, num_shards)), 1)  # (a shuffle buffer >= 1)
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
        dataset = dataset.with_options(options)
    if shuffle:
        dataset = dataset.shuffle(count, seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.batch(batch_size)
    dataset = dataset.map(to_batch, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return dataset.prefetch(tf.data.AUTOTUNE)


def _check_tokenizers(source_tokenizer: Any, target_tokenizer: Any) -> None:
    """Refuse a tokenizer that is not one of ours, or not adapted."""
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


def _pair_count(sources: tf.Tensor, targets: tf.Tensor) -> int:
    """The number of pairs, checked: known, the same on both sides, not zero."""
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
    return count


def _batch_tokenizer(source_tokenizer: Any, target_tokenizer: Any, multiple: int):
    """The pipeline's map: a batch of raw pairs to `({"source_ids", "target_ids"}, labels)`,
    lengths padded to a multiple of `multiple`."""

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

    return to_batch

"""Source ids as `Seq2Seq` and `Translator` take them: the checks of host ids, and the one
padding step a source with no steps becomes."""

from __future__ import annotations

from typing import Any

import numpy as np
from keras import ops


def check_host_source_ids(ids: Any, vocabulary_size: int) -> np.ndarray:
    """Source ids given as host data (NumPy, lists) checked before decoding: a `[batch,
    length]` array of integers in `[0, vocabulary_size)`; returned as int32 NumPy."""
    ids = np.asarray(ids)
    if ids.size and not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(
            f"`source_ids` must be integer token ids. Received: source_ids.dtype={ids.dtype}"
        )
    if ids.ndim != 2:
        raise ValueError(
            "`source_ids` must be a [batch, length] array of integer token ids. Received: "
            f"shape {ids.shape}"
        )
    if ids.size and (ids.min() < 0 or ids.max() >= vocabulary_size):
        raise ValueError(
            f"`source_ids` must be in [0, {vocabulary_size}) (the source vocabulary). "
            f"Received ids from {ids.min()} to {ids.max()}"
        )
    return ids.astype("int32")


def at_least_one_step(source_ids):
    """Source ids `[B, S]` with no step (S = 0) become one padding step, an all-padding
    source (recurrent layers need one step; padding is masked, so it changes nothing).

    A length unknown when traced (a TensorFlow graph with a `None` length, e.g. an export
    signature) is padded in the graph, so a zero-length input at run time is covered too.
    """
    steps = source_ids.shape[1]
    if steps is None:
        steps = ops.shape(source_ids)[1]
        if steps is None:  # a symbolic (Keras) tensor: nothing to pad
            return source_ids
        return ops.pad(source_ids, [[0, 0], [0, ops.maximum(0, 1 - steps)]])
    if steps != 0:
        return source_ids
    return ops.zeros((ops.shape(source_ids)[0], 1), source_ids.dtype)

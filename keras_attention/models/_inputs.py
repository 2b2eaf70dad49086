"""Token ids as `Seq2Seq` and `Translator` take them: the checks of host ids, the rule for ids
outside the vocabulary, and the one padding step a source with no steps becomes.

Out-of-vocabulary ids: with an `oov_id` they are
mapped to it inside the model (`map_out_of_vocabulary`); without one, host data (NumPy arrays,
lists) is checked before anything runs (`check_host_ids`), and a backend tensor that is not read
back embeds such an id as a zero vector, on every backend (`cells.attention_rnn.embed_ids`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from keras import ops

_OOV_HINT = " (give the model an `oov_id`, e.g. oov_id=1, to map such ids to an unknown token)"


def check_host_ids(name: str, ids: np.ndarray, vocabulary_size: int) -> None:
    """A `ValueError` naming `name` when host integer ids leave `[0, vocabulary_size)`."""
    if ids.size and np.issubdtype(ids.dtype, np.integer):
        low, high = ids.min(), ids.max()
        if low < 0 or high >= vocabulary_size:
            raise ValueError(
                f"`{name}` must be in [0, {vocabulary_size}) (the vocabulary of that side). "
                f"Received ids from {low} to {high}{_OOV_HINT}"
            )


def check_host_source_ids(ids: Any, vocabulary_size: int, oov_id: int | None = None) -> np.ndarray:
    """Source ids given as host data (NumPy, lists) checked before decoding: a `[batch,
    length]` array of integers, in `[0, vocabulary_size)` unless the model maps ids outside it
    to `oov_id`; returned as int32 NumPy."""
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
    if oov_id is None:
        check_host_ids("source_ids", ids, vocabulary_size)
    elif ids.size:  # int32 keeps the range test exact for ids past 2**31 too
        ids = np.where((ids >= 0) & (ids < vocabulary_size), ids, oov_id)
    return ids.astype("int32")


def map_out_of_vocabulary(ids, vocabulary_size: int, oov_id: int | None):
    """Ids outside `[0, vocabulary_size)` replaced by `oov_id` (unchanged when it is `None`)."""
    if oov_id is None:
        return ids
    ids = ops.convert_to_tensor(ids)
    valid = ops.logical_and(ops.greater_equal(ids, 0), ops.less(ids, vocabulary_size))
    return ops.where(valid, ids, ops.full_like(ids, oov_id))


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


def check_tokenizer(name: str, tokenizer: Any, vocabulary_size: int | None = None) -> Any:
    """`tokenizer` (or `None`) checked: it must be a tokenizer (with `tokenize`, `detokenize`
    and `vocabulary_size`: a `TypeError` otherwise, e.g. for a string), and its
    `vocabulary_size` must equal `vocabulary_size` when that is given (a `ValueError`: ids of
    one vocabulary read with another decode to the wrong text, or to unknown tokens)."""
    if tokenizer is None:
        return None
    if isinstance(tokenizer, (str, bytes)) or not all(
        hasattr(tokenizer, attribute) for attribute in ("tokenize", "detokenize")
    ):
        raise TypeError(
            f"`{name}` must be a tokenizer (e.g. keras_attention.text.CharTokenizer) or None. "
            f"Received: {name}={tokenizer!r:.200} (of type {type(tokenizer).__name__})"
        )
    try:
        size = tokenizer.vocabulary_size
    except (AttributeError, ValueError) as error:
        raise ValueError(
            f"`{name}` has no vocabulary: adapt it (or give it a vocabulary) first. "
            f"Received: {name}={tokenizer!r:.200}"
        ) from error
    side = name.replace("_tokenizer", "")
    if vocabulary_size is not None and size != vocabulary_size:
        raise ValueError(
            f"`{name}` has a vocabulary of {size} ids but the model's {side} vocabulary has "
            f"{vocabulary_size}: its ids would decode to the wrong tokens. Received: "
            f"{name}.vocabulary_size={size}, {side}_vocabulary_size={vocabulary_size}"
        )
    return tokenizer

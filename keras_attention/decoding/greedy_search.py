"""Greedy decoding: at every step take the most probable next token."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
from keras import ops

from keras_attention._deprecation import SEARCH_RENAMES, renamed_arguments
from keras_attention._validation import check_int
from keras_attention.decoding.step_fn import (
    StepFn,
    call_step,
    check_search_arguments,
    check_tokens,
    complete_initial_state,
    search_loop,
    write_step,
)
from keras_attention.functional.sampling import argmax_tokens

__all__ = ["greedy_search"]


@renamed_arguments(**SEARCH_RENAMES)
def greedy_search(
    step_fn: StepFn,
    initial_state: Any,
    batch_size: Any,
    start_id: int,
    end_id: int,
    max_length: int,
    vocabulary_size: int | None = None,
    pad_id: int = 0,
) -> dict:
    """Decode by taking `argmax_v log p(v | y_<t)` at every step until `end_id`.

    The loop is an `ops.while_loop` with `maximum_iterations=max_length - 1` (the first step runs
    before it, to learn the vocabulary and memory sizes) over fixed-size time-major buffers
    written with `ops.scatter_update`; it stops early once every row has emitted `end_id`, and
    compiles under `jit_compile=True`. Logits are cast to float32 before the log-softmax.

    The token-id arguments were called `start_token`, `end_token`, `pad_token` and `vocab_size`
    up to 0.2.0; those keywords still work, with a `DeprecationWarning`, until 0.4.0.

    Args:
        step_fn: `step_fn(tokens [N] int32, state, t) -> (logits [N, V], new_state, weights
            [N, S] or None)`; see `make_step_fn` for attentional cells.
        initial_state: A nested structure of `[B, ...]` tensors (may be empty). With a
            `make_step_fn` step, the wrapped cell's states alone (the encoder's `[h, c]`) are
            completed with the cell's extra states first.
        batch_size: B, an int or a scalar tensor.
        start_id: The token id fed at step 0.
        end_id: The token id that ends a sequence.
        max_length: The most tokens generated per row (the end token included).
        vocabulary_size: V, to check the token ids before decoding. Defaults to `None` (checked
            against the logits' static shape when it is known).
        pad_id: The id written after the end token. Defaults to `0`.

    Returns:
        A dict: `"ids"` `[B, max_length]` int32 (the generated tokens, the end token included,
        `pad_id` after it); `"scores"` `[B]` float32, the sum of the log-probabilities of the
        generated tokens; `"lengths"` `[B]` int32, the number of generated tokens, the end token
        included; and, when `step_fn` returns attention weights, `"alignments"`
        `[B, max_length, S]` float32 (zero after the end token).

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> def step_fn(tokens, state, t):  # favours token t + 3 for 3 steps, then token 2 (end)
    ...     favoured = ops.where(t < 3, t + 3, 2)
    ...     return ops.one_hot(ops.full(ops.shape(tokens), favoured), 8) * 5.0, state, None
    >>> result = greedy_search(step_fn, (), batch_size=1, start_id=1, end_id=2,
    ...                        max_length=6)
    >>> ops.convert_to_numpy(result["ids"]).tolist(), int(result["lengths"][0])
    ([[3, 4, 5, 2, 0, 0]], 4)
    """
    max_length = check_int("max_length", max_length, minimum=1)
    if vocabulary_size is not None:
        vocabulary_size = check_int("vocabulary_size", vocabulary_size, minimum=1)
    tokens = {"start_id": start_id, "end_id": end_id, "pad_id": pad_id}
    check_tokens(tokens, vocabulary_size)
    check_search_arguments(step_fn, batch_size, 1, start_id)

    return one_path_search(
        step_fn,
        initial_state,
        batch_size,
        lambda t, log_probs: argmax_tokens(log_probs),
        end_id=end_id,
        start_id=start_id,
        max_length=max_length,
        vocabulary_size=vocabulary_size,
        pad_id=pad_id,
    )


def one_path_search(
    step_fn: StepFn,
    initial_state: Any,
    batch_size: Any,
    choose: Callable,
    start_id: int,
    end_id: int,
    max_length: int,
    vocabulary_size: int | None,
    pad_id: int,
) -> dict:
    """The loop of `greedy_search` and `sample_search` (arguments already checked): one
    hypothesis per row, its token at step t `choose(t, log_probs [N, V]) -> [N] int32`."""
    tokens = ops.full((batch_size,), start_id, "int32")
    initial_state = complete_initial_state(step_fn, initial_state, batch_size)
    state = keras.tree.map_structure(ops.convert_to_tensor, initial_state)  # NumPy states too
    log_probs, state, weights = call_step(step_fn, tokens, state, ops.convert_to_tensor(0, "int32"))
    if vocabulary_size is None and log_probs.shape[-1] is not None:
        check_tokens({"end_id": end_id, "pad_id": pad_id}, int(log_probs.shape[-1]))
    with_weights = weights is not None

    buffers = {"ids": ops.full((max_length, batch_size), pad_id, "int32")}
    if with_weights:
        buffers["alignments"] = ops.zeros((max_length,) + tuple(ops.shape(weights)), "float32")
    scores = ops.zeros((batch_size,), "float32")
    lengths = ops.zeros((batch_size,), "int32")
    finished = ops.zeros((batch_size,), "bool")

    def advance(t, log_probs, weights, state, buffers, scores, lengths, finished):
        """Choose the tokens of step t from its log-probabilities and record them."""
        token = choose(t, log_probs)
        token_log_prob = ops.take_along_axis(log_probs, ops.expand_dims(token, -1), axis=-1)[:, 0]
        token = ops.where(finished, pad_id, token)
        scores = scores + ops.where(finished, 0.0, token_log_prob)
        lengths = lengths + ops.where(finished, 0, 1)
        buffers = dict(buffers, ids=write_step(buffers["ids"], t, token))
        if with_weights:
            weights = ops.where(ops.expand_dims(finished, -1), 0.0, weights)
            buffers["alignments"] = write_step(buffers["alignments"], t, weights)
        finished = ops.logical_or(finished, ops.equal(token, end_id))
        return token, state, buffers, scores, lengths, finished

    carry = advance(
        ops.convert_to_tensor(0, "int32"),
        log_probs,
        weights,
        state,
        buffers,
        scores,
        lengths,
        finished,
    )
    _, _, buffers, scores, lengths, _ = search_loop(step_fn, advance, carry, max_length)
    result = {
        "ids": ops.transpose(buffers["ids"], (1, 0)),
        "scores": scores,
        "lengths": lengths,
    }
    if with_weights:
        result["alignments"] = ops.transpose(buffers["alignments"], (1, 0, 2))
    return result

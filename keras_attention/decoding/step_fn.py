"""The step function the searches run, an adapter for attentional cells, and shared checks.

A step function is `step_fn(tokens, state, t) -> (logits, new_state, weights)`:
`tokens` `[N]` int32 (the previous token of each row), `state` a nested structure of `[N, ...]`
tensors, `t` the int32 step index (0 for the step that consumes the start token); `logits`
`[N, V]`, `new_state` the same structure, `weights` `[N, S]` (the attention weights) or `None`.
Any callable with that protocol works; a `StepFunction` (what `make_step_fn` returns) also
records what it was made for, so that the searches can check their arguments against it.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import keras
import numpy as np
from keras import ops

from keras_attention._validation import check_int, check_mask, is_integer
from keras_attention.cells.base_attention_cell import BaseAttentionCell

__all__ = ["StepFunction", "make_step_fn"]

StepFn = Callable[[Any, Any, Any], tuple]

#: The logit given to tokens a `StepFunction.never_generating` step must not produce.
_BANNED_LOGIT = -1e9


class StepFunction:
    """A step function `(tokens, state, t) -> (logits, new_state, weights)` with the facts
    the searches check their arguments against (`check_search_arguments`).

    Args:
        fn: The step itself, any callable with the protocol above.
        beam_width: The number of beams per row its memory was repeated for, or `None`
            (unknown: not checked). Defaults to `None`.
        batch_size: The number of memory rows it was made with (before the beam repeat), or
            `None`. Defaults to `None`.
        input_vocabulary_size: The number of token ids it accepts (its embedding's
            `input_dim`), or `None`. Defaults to `None`.
        complete_state: `complete_state(initial_state, batch_size) -> state`, run by the
            searches on the initial state they get (before the beam repeat), or `None`.
            `make_step_fn` sets it to the cell's `complete_initial_state`, so that the
            encoder's final states alone (`[h, c]`) are completed with the cell's extra
            states. Defaults to `None`.

    Example:

    >>> from keras import ops
    >>> step = StepFunction(lambda tokens, state, t: (ops.zeros((2, 5)), state, None),
    ...                     beam_width=1, batch_size=2, input_vocabulary_size=5)
    >>> masked = step.never_generating({0, 1})
    >>> masked.batch_size, masked.input_vocabulary_size
    (2, 5)
    >>> ops.convert_to_numpy(masked(ops.zeros((2,), "int32"), (), 0)[0])[0].tolist()
    [-1000000000.0, -1000000000.0, 0.0, 0.0, 0.0]
    """

    def __init__(
        self,
        fn: StepFn,
        beam_width: int | None = None,
        batch_size: int | None = None,
        input_vocabulary_size: int | None = None,
        complete_state: Callable | None = None,
    ) -> None:
        if not callable(fn):
            raise TypeError(
                "`fn` must be a function (tokens, state, t) -> (logits, new_state, weights). "
                f"Received: fn={fn!r}"
            )
        self.fn = fn
        self.beam_width = None if beam_width is None else check_int("beam_width", beam_width, 1)
        self.batch_size = None if batch_size is None else check_int("batch_size", batch_size, 0)
        self.input_vocabulary_size = (
            None
            if input_vocabulary_size is None
            else check_int("input_vocabulary_size", input_vocabulary_size, 1)
        )
        if complete_state is not None and not callable(complete_state):
            raise TypeError(
                "`complete_state` must be a function (initial_state, batch_size) -> state. "
                f"Received: complete_state={complete_state!r}"
            )
        self.complete_state = complete_state

    def __call__(self, tokens, state, t):
        return self.fn(tokens, state, t)

    def never_generating(self, token_ids) -> StepFunction:
        """The same step, with the same recorded fields, whose logits of `token_ids` are
        −1e9 (and every logit float32): the searches never choose those tokens."""
        banned = sorted({check_int("token_ids", i, minimum=0) for i in token_ids})
        step = self.fn

        def masked_step(tokens, state, t):
            logits, new_state, weights = step(tokens, state, t)
            vocabulary = logits.shape[-1]
            if vocabulary is None:
                raise ValueError(
                    "`never_generating` needs logits with a known vocabulary size. Received: "
                    f"logits of shape {tuple(logits.shape)}"
                )
            if banned and banned[-1] >= vocabulary:
                raise ValueError(
                    f"`token_ids` must be in [0, {vocabulary}) (the logits' vocabulary). "
                    f"Received: token_ids={banned}"
                )
            allowed = np.ones((vocabulary,), bool)
            allowed[banned] = False
            logits = ops.where(allowed, ops.cast(logits, "float32"), _BANNED_LOGIT)
            return logits, new_state, weights

        return StepFunction(
            masked_step,
            self.beam_width,
            self.batch_size,
            self.input_vocabulary_size,
            self.complete_state,
        )

    def __repr__(self) -> str:
        return (
            f"StepFunction({self.fn!r}, beam_width={self.beam_width}, "
            f"batch_size={self.batch_size}, input_vocabulary_size={self.input_vocabulary_size})"
        )


def make_step_fn(
    cell: Any,
    embedding: Callable,
    output_layer: Callable,
    memory: Any,
    memory_mask: Any = None,
    beam_width: int = 1,
) -> StepFunction:
    """Make a step function from a trained `embedding -> cell -> output_layer` decoder.

    The step is `logits = output_layer(cell.step(embedding(tokens), states, memory, t))`, the
    same computation `AttentionRNN` runs teacher-forced. The memory is prepared (keys projected)
    once, here. For `beam_search` pass the same `beam_width`: the memory and mask are then
    repeated to `[B * beam_width, ...]` (row `b * beam_width + k` is beam `k` of row `b`, the
    layout `beam_search` uses for the state).

    Args:
        cell: A `BahdanauAttentionCell` or `LuongAttentionCell`.
        embedding: Maps token ids `[N]` to `[N, d_y]` (e.g. `keras.layers.Embedding`).
        output_layer: Maps the cell output `[N, d]` to logits `[N, V]` (e.g. `Dense(V)`).
        memory: Encoder outputs `[B, S, d_h]`.
        memory_mask: Optional boolean `[B, S]`. Defaults to `None`.
        beam_width: How many times to repeat each memory row. Defaults to `1`.

    Returns:
        A `StepFunction` `step_fn(tokens, states, t) -> (logits, new_states, weights)`
        recording `beam_width`, the memory's batch size and the embedding's `input_dim`
        (which the searches check their arguments against). The searches start it from
        `cell.get_initial_state(B, memory)` or from the encoder's final states alone (`[h, c]`
        of an `LSTMCell`, as tfa's `clone(cell_state=...)` took them): they complete those
        with `cell.complete_initial_state(states, B, memory)` (the fed-back `h~` zero, the
        attention's initial weights). Driving `step_fn` by hand, complete them yourself.
        Pass the memory untiled: with `beam_width=K` it is repeated here (tfa's `tile_batch`
        must go), and `beam_search` repeats the state.

    Example:

    >>> import numpy as np, keras
    >>> from keras_attention import LuongAttention, LuongAttentionCell
    >>> from keras_attention.decoding import greedy_search
    >>> cell = LuongAttentionCell(keras.layers.LSTMCell(8), LuongAttention())
    >>> step_fn = make_step_fn(cell, keras.layers.Embedding(10, 4), keras.layers.Dense(10),
    ...                        np.ones((2, 5, 8), "float32"))
    >>> result = greedy_search(step_fn, cell.get_initial_state(2), batch_size=2,
    ...                        start_id=1, end_id=2, max_length=3)
    >>> tuple(result["ids"].shape), tuple(result["alignments"].shape)
    ((2, 3), (2, 3, 5))
    """
    beam_width = check_int("beam_width", beam_width, minimum=1)
    if not isinstance(cell, BaseAttentionCell):
        raise TypeError(
            f"`cell` must be a BahdanauAttentionCell or LuongAttentionCell. Received: cell={cell!r}"
        )
    for name, layer in (("embedding", embedding), ("output_layer", output_layer)):
        if not callable(layer):
            raise TypeError(f"`{name}` must be callable (a layer). Received: {name}={layer!r}")
    memory = ops.convert_to_tensor(memory)
    if len(memory.shape) != 3:
        raise ValueError(
            "`memory` must be the encoder outputs [batch, memory_steps, dim]. Received: "
            f"memory.shape={tuple(memory.shape)}"
        )
    check_mask("memory_mask", memory_mask, memory, "memory")
    rows = memory.shape[0]
    untiled = memory
    if memory_mask is not None:
        memory_mask = ops.cast(memory_mask, "bool")
    if beam_width > 1:
        memory = ops.repeat(memory, beam_width, axis=0)
        if memory_mask is not None:
            memory_mask = ops.repeat(memory_mask, beam_width, axis=0)
    prepared = cell.prepare_memory(memory, memory_mask)
    table = cell.projected_table(embedding, memory.shape[0])

    def step_fn(tokens, states, t):
        if table is None:
            output, new_states, weights = cell.step(
                embedding(tokens), list(states), prepared, position=t
            )
        else:  # the embedding and the cell's input projection, looked up as one table
            cell._check_states(states)
            output, new_states, weights = cell.step_projected(
                ops.take(table, ops.cast(tokens, "int32"), axis=0),
                list(states),
                prepared,
                position=t,
            )
        return output_layer(output), new_states, weights

    def complete_state(initial_state, batch_size):
        # Only the wrapped cell's states alone are completed: a full state passes unchanged
        # (its dtype too), as the searches took it before.
        states = initial_state if isinstance(initial_state, (list, tuple)) else [initial_state]
        if len(states) == len(cell.state_size):
            return initial_state
        return cell.complete_initial_state(states, batch_size, untiled)

    return StepFunction(
        step_fn,
        beam_width=beam_width,
        batch_size=rows,
        input_vocabulary_size=getattr(embedding, "input_dim", None),
        complete_state=complete_state,
    )


# ---------------------------------------------------------------- shared by the searches
# (`check_int` is the validation floor's, `keras_attention._validation`, imported above.)
def check_search_arguments(step_fn: Any, batch_size: Any, beam_width: int, start_id) -> None:
    """Check what a search gets against each other and against what the step function records
    (a `StepFunction`'s `beam_width`, `batch_size` and `input_vocabulary_size`; a plain
    function carrying attributes of those names is read the same way)."""
    if not callable(step_fn):
        raise TypeError(
            "`step_fn` must be a function (tokens, state, t) -> (logits, new_state, weights), "
            f"e.g. from make_step_fn. Received: step_fn={step_fn!r}"
        )
    if is_integer(batch_size):
        check_int("batch_size", batch_size, minimum=0)
    elif isinstance(batch_size, (bool, np.bool_, str, bytes, numbers.Number)) or not hasattr(
        batch_size, "dtype"
    ):
        raise ValueError(
            f"`batch_size` must be a non-negative integer (or a scalar integer tensor). "
            f"Received: batch_size={batch_size!r}"
        )
    # tfa users tile the memory by hand (`tile_batch`); make_step_fn repeats it itself.
    no_tiling = (
        " make_step_fn(..., beam_width=K) repeats the memory for the beams itself and "
        "beam_search repeats the initial state: give both the untiled [batch, ...] tensors "
        "(no tfa `tile_batch`)."
    )
    made_for = getattr(step_fn, "beam_width", None)
    if made_for is not None and made_for != beam_width:
        raise ValueError(
            f"`step_fn` was made with make_step_fn(..., beam_width={made_for}) but the search "
            f"runs {beam_width} beam(s) per row: pass the same value.{no_tiling} Received: "
            f"beam_width={beam_width}"
        )
    rows = getattr(step_fn, "batch_size", None)
    if is_integer(rows) and is_integer(batch_size) and rows != batch_size:
        tiled = beam_width > 1 and rows == batch_size * beam_width
        raise ValueError(
            f"`batch_size` must be the number of memory rows `step_fn` was made with ({rows})."
            + (
                f" {rows} = batch_size x beam_width: the memory looks tiled already (tfa's "
                f"`tile_batch`).{no_tiling}"
                if tiled
                else ""
            )
            + f" Received: batch_size={batch_size}"
        )
    vocabulary = getattr(step_fn, "input_vocabulary_size", None)
    if is_integer(vocabulary):
        check_tokens({"start_id": start_id}, int(vocabulary))


def complete_initial_state(step_fn: Any, initial_state: Any, batch_size: Any) -> Any:
    """The initial state completed by the step function's `complete_state` (a
    `StepFunction` from `make_step_fn`: the encoder's states alone get the cell's extra
    states), or unchanged."""
    complete = getattr(step_fn, "complete_state", None)
    return initial_state if complete is None else complete(initial_state, batch_size)


def check_tokens(tokens: dict, vocabulary_size: int | None) -> None:
    """Check token ids are integers in `[0, vocabulary_size)` (when that size is known)."""
    for name, value in tokens.items():
        check_int(name, value, minimum=0)
        if vocabulary_size is not None and value >= vocabulary_size:
            raise ValueError(
                f"`{name}` must be a token id in [0, {vocabulary_size}) (the vocabulary size). "
                f"Received: {name}={value}"
            )


def call_step(step_fn: StepFn, tokens, state, t):
    """Run `step_fn`; return float32 log-probabilities, the new state (in the structure of
    `state`) and the float32 attention weights or `None`."""
    result = step_fn(tokens, state, t)
    if not isinstance(result, (tuple, list)) or len(result) not in (2, 3):
        raise ValueError(
            "`step_fn` must return `(logits, new_state, weights)` (weights may be None). "
            f"Received: {result!r}"
        )
    logits, new_state = result[0], result[1]
    weights = result[2] if len(result) == 3 else None
    if len(logits.shape) != 2:
        raise ValueError(
            f"`step_fn` must return logits of shape [N, vocabulary_size]. Received: shape "
            f"{tuple(logits.shape)}"
        )
    log_probs = ops.log_softmax(ops.cast(logits, "float32"), axis=-1)
    new_state = keras.tree.pack_sequence_as(state, keras.tree.flatten(new_state))
    new_state = keras.tree.map_structure(
        lambda new, old: ops.cast(new, old.dtype), new_state, state
    )
    if weights is not None:
        weights = ops.cast(weights, "float32")
    return log_probs, new_state, weights


def write_step(buffer, t, values):
    """`buffer[t] = values` for a time-major buffer `[L, ...]` (a scatter, not a slice update:
    no `XlaDynamicUpdateSlice` in exported graphs)."""
    if 0 in tuple(buffer.shape):  # an empty batch or memory: nothing to write
        return buffer
    return ops.scatter_update(buffer, ops.reshape(t, (1, 1)), ops.expand_dims(values, 0))


def search_loop(step_fn: StepFn, advance, carry: tuple, max_length: int) -> tuple:
    """Steps 1 … max_length − 1 of a search whose step 0 already ran.

    `carry` is `(tokens, state, buffers, scores, lengths, finished)` after step 0, and
    `advance(t, log_probs, weights, *carry[1:]) -> carry` chooses and records step t. An
    `ops.while_loop` with `maximum_iterations`, stopping early once every entry of `finished`
    is true. Returns the final carry.
    """
    if max_length <= 1:
        return carry

    def cond(t, tokens, state, buffers, scores, lengths, finished):
        return ops.logical_and(t < max_length, ops.logical_not(ops.all(finished)))

    def body(t, tokens, state, *rest):
        log_probs, state, weights = call_step(step_fn, tokens, state, t)
        return (t + 1, *advance(t, log_probs, weights, state, *rest))

    result = ops.while_loop(
        cond, body, (ops.convert_to_tensor(1, "int32"), *carry), maximum_iterations=max_length - 1
    )
    return tuple(result[1:])

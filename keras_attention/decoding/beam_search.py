"""Beam search with the GNMT length and coverage penalties (Wu et al., 2016)."""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from keras_attention._deprecation import SEARCH_RENAMES, renamed_arguments
from keras_attention._validation import check_finite, check_int
from keras_attention.decoding.searches import check_coverage_penalty
from keras_attention.decoding.step_fn import (
    StepFn,
    call_step,
    check_search_arguments,
    check_tokens,
    complete_initial_state,
    search_loop,
    write_step,
)

__all__ = ["beam_search", "gnmt_coverage_penalty", "gnmt_length_penalty"]

# The score of impossible candidates: dead beams at step 0, non-pad extensions of finished beams.
_NEG = -1e9


def gnmt_length_penalty(lengths: Any, alpha: float) -> Any:
    """The GNMT length penalty `lp(len) = ((5 + len) / 6) ** alpha`.

    Args:
        lengths: Sequence lengths (any shape, any numeric dtype).
        alpha: The exponent; `0` turns the penalty off.

    Returns:
        float32 tensor of the shape of `lengths`.

    Example:

    >>> round(float(gnmt_length_penalty(7, 1.0)), 6)
    2.0
    """
    return ops.power((5.0 + ops.cast(lengths, "float32")) / 6.0, float(alpha))


def gnmt_coverage_penalty(coverage: Any, beta: float) -> Any:
    """The GNMT coverage penalty `cp = β · Σ_i log(min(c_i, 1))` of accumulated attention.

    `c_i = Σ_t α_{t,i}` is the attention source position `i` received over the decoded steps.
    As in tfa, positions with exactly zero coverage count as fully covered (`log 1 = 0`): they
    are padding (masked memory gets exactly zero attention) or outside a local window.

    Args:
        coverage: Accumulated attention weights `[..., S]` (float).
        beta: The weight β; `0` turns the penalty off.

    Returns:
        float32 tensor of shape `[...]` (zero or negative for β > 0).

    Example:

    >>> import numpy as np
    >>> round(float(gnmt_coverage_penalty(np.array([0.5, 1.7, 0.0], "float32"), 0.2)), 6)
    -0.138629
    """
    coverage = ops.cast(coverage, "float32")
    coverage = ops.where(ops.equal(coverage, 0.0), 1.0, ops.minimum(coverage, 1.0))
    return float(beta) * ops.sum(ops.log(coverage), axis=-1)


@renamed_arguments(**SEARCH_RENAMES)
def beam_search(
    step_fn: StepFn,
    initial_state: Any,
    batch_size: Any,
    start_id: int,
    end_id: int,
    max_length: int,
    beam_width: int = 4,
    length_penalty: float = 0.6,
    coverage_penalty: float = 0.0,
    vocabulary_size: int | None = None,
    pad_id: int = 0,
) -> dict:
    """Beam search ranked by the GNMT score `log p(y) / lp(|y|) + cp(y)` (Wu et al., 2016).

    `lp(len) = ((5 + len) / 6) ** length_penalty`, `len` counting the end token, and
    `cp = β · Σ_i log(min(Σ_t α_{t,i}, 1))` with `β = coverage_penalty` (`gnmt_coverage_penalty`;
    tfa's `coverage_penalty_weight`) over the attention weights the beam accumulated. As in GNMT the
    coverage term scores complete hypotheses only: it is added from the step a beam emits the
    end token (tfa adds it one step later, to beams finished before the step) and stays fixed
    while the beam is frozen; live beams are ranked by `log p / lp` alone. Each step scores
    the `K * V` extensions of the `K = beam_width` beams of a row and
    keeps the best `K` by normalised score; beams store the raw sum of log-probabilities. A
    finished beam is frozen: its only extension is `pad_id` at zero cost, so its score and
    length stay fixed while it competes with the live beams. The state is tiled to
    `[B * K, ...]` (row `b * K + k` is beam `k` of row `b`, i.e. `ops.repeat(x, K, axis=0)`) and
    re-gathered by parent beam every step with `keras.tree.map_structure`.

    The loop is an `ops.while_loop` with `maximum_iterations` over fixed-size buffers written
    with `ops.scatter_update`: each step writes its tokens, weights and parent rows (`O(K)`
    per step), and the histories of the last beams are traced back once after the loop;
    it stops once all beams are finished and compiles under `jit_compile=True`. Logits are cast
    to float32 before the log-softmax and top-k. With `beam_width=1` it equals `greedy_search`.

    The token-id arguments were called `start_token`, `end_token`, `pad_token` and `vocab_size`
    up to 0.2.0; those keywords still work, with a `DeprecationWarning`, until 0.4.0.

    Args:
        step_fn: `step_fn(tokens [N] int32, state, t) -> (logits [N, V], new_state, weights
            [N, S] or None)`, here with `N = B * K`; see `make_step_fn` (pass it the same
            `beam_width`: memory it closes over must be tiled like the state).
        initial_state: A nested structure of `[B, ...]` tensors (may be empty); tiled here
            (do not tile it by hand, as tfa's `tile_batch` did). With a `make_step_fn` step,
            the wrapped cell's states alone (the encoder's `[h, c]`) are completed first.
        batch_size: B, an int or a scalar tensor.
        start_id: The token id fed at step 0.
        end_id: The token id that ends a sequence.
        max_length: The most tokens generated per row (the end token included).
        beam_width: K, the number of beams per row. Defaults to `4`.
        length_penalty: The GNMT exponent alpha; `0` ranks by raw log-probability.
            Defaults to `0.6`.
        coverage_penalty: The GNMT weight beta of the coverage penalty; `0` turns it off (and
            the search is then exactly the one without it). Needs a `step_fn` that returns
            attention weights. Defaults to `0.0`.
        vocabulary_size: V, to check the token ids before decoding. Defaults to `None` (checked
            against the logits' static shape when it is known).
        pad_id: The id written after the end token. Defaults to `0`.

    Returns:
        A dict. For the best hypothesis of each row: `"ids"` `[B, max_length]` int32 (the end
        token included, `pad_id` after it), `"scores"` `[B]` float32 (sum of
        log-probabilities), `"normalized_scores"` `[B]` (`scores / lp(lengths)`, plus the
        coverage penalty of finished beams: what beams are ranked by), `"lengths"` `[B]` int32
        (the end token included) and, when `step_fn` returns attention weights, `"alignments"`
        `[B, max_length, S]` (zero after the end token). The n-best list, every beam best
        first: `"beam_ids"` `[B, K, max_length]`, `"beam_scores"` `[B, K]` (sums of
        log-probabilities), `"beam_normalized_scores"` `[B, K]` (sorted, decreasing) and
        `"beam_lengths"` `[B, K]`. Beams are distinct hypotheses; when a row has fewer than K
        possible ones, the rest score about -1e9.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> # From the start token: token 3 (p=0.6) then anything, or token 4 (p=0.4) then end.
    >>> table = np.full((8, 8), 1e-9, "float32")
    >>> table[1, 3], table[1, 4], table[3, 5:], table[4, 2], table[5:, 2] = .6, .4, 1 / 3, 1, 1
    >>> def step_fn(tokens, state, t):
    ...     return ops.log(ops.take(table, tokens, axis=0)), state, None
    >>> result = beam_search(step_fn, (), batch_size=1, start_id=1, end_id=2,
    ...                      max_length=4, beam_width=2, length_penalty=0.0)
    >>> ops.convert_to_numpy(result["ids"]).tolist()
    [[4, 2, 0, 0]]

    References:
        Wu et al., 2016, "Google's Neural Machine Translation System", eq. 14.
    """
    max_length = check_int("max_length", max_length, minimum=1)
    k = check_int("beam_width", beam_width, minimum=1)
    alpha = check_finite("length_penalty", length_penalty)
    beta = check_coverage_penalty(coverage_penalty)
    if vocabulary_size is not None:
        vocabulary_size = check_int("vocabulary_size", vocabulary_size, minimum=1)
    check_tokens({"start_id": start_id, "end_id": end_id, "pad_id": pad_id}, vocabulary_size)
    check_search_arguments(step_fn, batch_size, k, start_id)

    n = batch_size * k
    initial_state = complete_initial_state(step_fn, initial_state, batch_size)
    state = keras.tree.map_structure(lambda s: ops.repeat(s, k, axis=0), initial_state)
    t0 = ops.convert_to_tensor(0, "int32")
    log_probs, state, weights = call_step(step_fn, ops.full((n,), start_id, "int32"), state, t0)
    vocab = log_probs.shape[-1]
    if vocab is None:
        vocab = ops.shape(log_probs)[-1]
    elif vocabulary_size is None:
        check_tokens({"end_id": end_id, "pad_id": pad_id}, int(vocab))
    with_weights = weights is not None
    with_coverage = beta != 0.0
    if with_coverage and not with_weights:
        raise ValueError(
            "`coverage_penalty` needs the attention weights: the `step_fn` must return them (as "
            f"make_step_fn's does). Received: coverage_penalty={coverage_penalty!r} and a "
            "step_fn returning weights None"
        )

    # The beams' histories as back-pointers (issue 41): step t's token and step-t weights of
    # every beam, and the row of its parent among step t-1's beams; the best beams' ids and
    # alignments are traced back once, after the loop. Steps never run keep pad tokens, zero
    # weights and every beam its own parent.
    buffers = {
        "ids": ops.full((max_length, n), pad_id, "int32"),
        "parents": ops.tile(ops.expand_dims(ops.arange(n, dtype="int32"), 0), (max_length, 1)),
    }
    if with_weights:
        buffers["alignments"] = ops.zeros((max_length,) + tuple(ops.shape(weights)), "float32")
    if with_coverage:  # not a buffer: each beam's accumulated weights [N, S], carried along
        buffers["coverage"] = ops.zeros(tuple(ops.shape(weights)), "float32")
    # Only beam 0 is alive at the start: the K copies of the start state are identical.
    first = ops.where(ops.arange(k) == 0, 0.0, _NEG)
    scores = ops.zeros((batch_size, k), "float32") + ops.cast(first, "float32")
    lengths = ops.zeros((batch_size, k), "int32")
    finished = ops.zeros((batch_size, k), "bool")
    offsets = ops.expand_dims(ops.arange(batch_size, dtype="int32") * k, -1)  # [B, 1]
    frozen = ops.cast(ops.where(ops.arange(vocab) == pad_id, 0.0, _NEG), "float32")  # [V]

    def advance(t, log_probs, weights, state, buffers, scores, lengths, finished):
        """Extend the beams with step t's log-probabilities `[N, V]`; keep the best K."""
        log_probs = ops.reshape(log_probs, (-1, k, vocab))
        log_probs = ops.where(ops.expand_dims(finished, -1), frozen, log_probs)
        totals = ops.reshape(ops.expand_dims(scores, -1) + log_probs, (-1, k * vocab))
        new_lengths = lengths + ops.where(finished, 0, 1)
        penalty = ops.repeat(gnmt_length_penalty(new_lengths, alpha), vocab, axis=1)
        ranked = totals / penalty
        if with_coverage:
            # Candidate (beam k, token v) covers coverage_k + alpha_k (zero once k finished);
            # it is complete if k was finished or v is the end token.
            alive = ops.logical_not(ops.reshape(finished, (-1, 1)))
            coverage = buffers["coverage"] + ops.where(alive, weights, 0.0)
            cp = ops.reshape(gnmt_coverage_penalty(coverage, beta), (-1, k, 1))
            complete = ops.logical_or(
                ops.expand_dims(finished, -1), ops.equal(ops.arange(vocab), end_id)
            )
            ranked = ranked + ops.reshape(ops.where(complete, cp, 0.0), (-1, k * vocab))
        ranks, chosen = ops.top_k(ranked, k)  # [B, K], sorted best first
        chosen = ops.cast(chosen, "int32")
        parent, token = chosen // vocab, chosen % vocab
        scores = ops.take_along_axis(totals, chosen, axis=1)
        lengths = ops.take_along_axis(new_lengths, parent, axis=1)
        parent_finished = ops.take_along_axis(finished, parent, axis=1)
        token = ops.where(parent_finished, pad_id, token)
        finished = ops.logical_or(parent_finished, ops.equal(token, end_id))

        rows = ops.reshape(offsets + parent, (-1,))  # [N]: the parent of every new beam
        flat_token = ops.reshape(token, (-1,))
        buffers = dict(
            buffers,
            ids=write_step(buffers["ids"], t, flat_token),
            parents=write_step(buffers["parents"], t, rows),
        )
        if with_weights:
            weights = ops.take(weights, rows, axis=0)
            was_finished = ops.reshape(parent_finished, (-1, 1))
            weights = ops.where(was_finished, 0.0, weights)
            buffers["alignments"] = write_step(buffers["alignments"], t, weights)
        if with_coverage:
            buffers["coverage"] = ops.take(coverage, rows, axis=0)
            buffers["ranks"] = ranks
        state = keras.tree.map_structure(lambda s: ops.take(s, rows, axis=0), state)
        return flat_token, state, buffers, scores, lengths, finished

    if with_coverage:  # the ranking scores of the beams, carried for the n-best list
        buffers["ranks"] = ops.zeros((batch_size, k), "float32")
    carry = advance(t0, log_probs, weights, state, buffers, scores, lengths, finished)
    _, _, buffers, scores, lengths, _ = search_loop(step_fn, advance, carry, max_length)
    # With a coverage penalty the ranking scores are carried; without, they are recomputed.
    ranks = buffers["ranks"] if with_coverage else scores / gnmt_length_penalty(lengths, alpha)
    return _results(trace_back(buffers, max_length), scores, ranks, lengths, k, max_length)


def trace_back(buffers: dict, max_length: int) -> dict:
    """The beams' histories from the loop's back-pointers: `ids` `[L, N]` (and `alignments`
    `[L, N, S]`) of the beams of the last step, following `parents` (row `r` of step `t`
    extended row `parents[t, r]` of step `t - 1`) from the last step to the first."""
    ids, parents = buffers["ids"], buffers["parents"]
    with_alignments = "alignments" in buffers
    if 0 in tuple(ids.shape):  # an empty batch
        return buffers
    n = ops.shape(ids)[1]

    def body(i, rows, out_ids, out_alignments):
        t = max_length - 1 - i
        out_ids = write_step(out_ids, t, ops.take(ids[t], rows, axis=0))
        if with_alignments:
            step = ops.take(buffers["alignments"][t], rows, axis=0)
            out_alignments = write_step(out_alignments, t, step)
        return i + 1, ops.take(parents[t], rows, axis=0), out_ids, out_alignments

    rows = ops.arange(n, dtype="int32")
    alignments = buffers["alignments"] if with_alignments else ops.zeros((), "float32")
    _, _, ids, alignments = ops.while_loop(
        lambda i, *_: i < max_length,
        body,
        (ops.convert_to_tensor(0, "int32"), rows, ids, alignments),
        maximum_iterations=max_length,
    )
    return {"ids": ids, **({"alignments": alignments} if with_alignments else {})}


def _results(buffers: dict, scores, ranks, lengths, k: int, max_length: int) -> dict:
    """The search's result: the best beam of every row, then the n-best list (beams best
    first). `buffers`: the loop's time-major `ids` `[max_length, B·K]` and, when the step
    returns weights, `alignments` `[max_length, B·K, S]`; `scores`, `ranks` (the normalized
    scores) and `lengths` `[B, K]`."""
    beam_ids = ops.transpose(ops.reshape(buffers["ids"], (max_length, -1, k)), (1, 2, 0))
    result = {
        "ids": beam_ids[:, 0],
        "scores": scores[:, 0],
        "normalized_scores": ranks[:, 0],
        "lengths": lengths[:, 0],
    }
    if "alignments" in buffers:
        history = buffers["alignments"]
        rows, memory_steps = ops.shape(history)[1], ops.shape(history)[-1]  # no -1: S may be 0
        history = ops.reshape(history, (max_length, rows // k, k, memory_steps))
        result["alignments"] = ops.transpose(history[:, :, 0], (1, 0, 2))
    result.update(
        beam_ids=beam_ids,
        beam_scores=scores,
        beam_normalized_scores=ranks,
        beam_lengths=lengths,
    )
    return result
